//! The timing model of a Fermi-class GPU (the DAC paper's GTX 480 baseline, or any
//! [`GpuConfig`]): SMs with warp schedulers (loose round robin or greedy-then-oldest),
//! a per-warp scoreboard, functional-unit latencies and issue intervals from the
//! configuration, coalescing of global and local accesses into line-sized
//! transactions through the shared [`crate::mem`] hierarchy (a private L1 per SM, a
//! banked L2, DRAM with latency and bandwidth), shared-memory bank conflicts over 32
//! banks, barriers, and block dispatch limited by the occupancy calculation.
//!
//! Execution is at issue: when a warp issues, [`super::exec::step`] runs the
//! instruction at once, and the model computes when its results are ready (the
//! scoreboard) and how long the units it used stay busy. Issue order, and therefore
//! the result of racy kernels, is a deterministic function of the program, the launch
//! and the configuration. The model runs on one host thread: SMs share the L2, DRAM
//! and global memory cycle by cycle, so splitting them over threads would make the
//! results depend on the host's scheduling.
//!
//! Cycles in which nothing can change are skipped: an SM whose warps all wait sleeps
//! until the earliest cycle one of them can issue, and the stall reason of that wait
//! is charged for every skipped cycle, so the statistics equal a cycle-by-cycle run's.
//!
//! The uniform datapath ([`Inst::is_uniform`]: `.uni` instructions and writes of
//! uniform registers): such an instruction occupies its scheduler for one cycle
//! instead of warp_size / simt_lanes_per_scheduler; arithmetic (ALU and integer
//! multiply class) runs on the SM's one scalar unit (the `UNIT_UNI` slot, busy
//! `uniform_issue_cycles` per instruction, result after `uniform_latency`); uniform
//! loads, divides and f64 use the same units and latencies as vector ones. It counts
//! in `warp_insts` and `uniform_insts`, and its active lanes in `thread_insts`, but
//! not in `vector_thread_insts` (the lane-utilization numerator: the lanes of vector
//! instructions that are active and whose guard holds).
//!
//! Structure for later issues: every instruction's unit class comes from
//! [`Inst::unit`]; the per-SM units are the `UNIT_*` slots of `Sm::unit_free`, where
//! DAC hardware (affine warp, queues, expansion units) plugs in as more units and
//! warp kinds.

use super::config::{GpuConfig, SchedPolicy};
use super::energy::{InstEnergy, Lanes};
use super::exec::{step, CtaInfo, Env, Flow, StepBuffers, WarpState, WARP};
use super::isa::{Inst, Op, Program, RegFile, Space, Unit};
use super::machine::{
    deadlock, guard_lanes, prepare, record_warp_inst, runaway, GlobalMemory, GpuFault, Launch,
    Limits, Prepared,
};
use super::occupancy::{occupancy, BlockResources};
use super::per_sm::{SmStats, Snapshot};
use super::stats::{Stall, StatValue, Stats};
use super::timing_dac::{deq_need, DacTotals, DeqNeed, Plan, SmDac};
use crate::energy::Energy;
use crate::record::Recorder;
use std::cell::Cell;

use crate::mem::{AccessKind, CacheConfig, DramConfig, MemConfig, MemorySystem, WritePolicy};

/// The warp scheduling policy of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SchedulerKind {
    /// Loose round robin: the next ready warp after the last one issued.
    Lrr,
    /// Greedy then oldest: the last warp issued while it can issue, else the oldest.
    Gto,
}

impl From<SchedPolicy> for SchedulerKind {
    fn from(p: SchedPolicy) -> Self {
        match p {
            SchedPolicy::Gto => SchedulerKind::Gto,
            SchedPolicy::Lrr => SchedulerKind::Lrr,
        }
    }
}

/// The result of a timing run.
#[derive(Clone, Debug, PartialEq)]
pub struct TimingReport {
    pub cycles: u64,
    pub warp_insts: u64,
    pub thread_insts: u64,
    pub stats: Stats,
    /// Every statistic as (name, value), for JSON.
    pub pairs: Vec<(String, StatValue)>,
    /// Each SM's share of the counters.
    pub per_sm: Vec<SmStats>,
}

/// Shared-memory banks (4-byte words).
pub const SHARED_BANKS: u64 = 32;
/// Cycles the SFU (divide, square root) is busy per warp instruction: 4 SFUs per SM.
const SFU_INTERVAL: u64 = 8;
/// Cycles the double-precision unit is busy per warp instruction (GeForce Fermi runs
/// f64 at a quarter of the f32 issue rate).
const F64_INTERVAL: u64 = 8;
/// Base of the synthetic addresses of local memory in the cache hierarchy.
const LOCAL_BASE: u64 = 0xF000_0000_0000;

const UNIT_MEM: usize = 0;
const UNIT_SFU: usize = 1;
const UNIT_F64: usize = 2;
/// The SM's scalar unit (uniform datapath arithmetic).
const UNIT_UNI: usize = 3;
const NUM_UNITS: usize = 4;

/// Scoreboard facts of one instruction, computed once per kernel.
#[derive(Clone, Copy, Debug, Default)]
struct InstInfo {
    /// Scoreboard slots read or written (RAW and WAW): registers, then predicates, then
    /// uniform registers.
    slots: [u32; 12],
    nslots: u8,
    /// Slots written.
    dsts: [u32; 3],
    ndst: u8,
    uniform: bool,
    /// The functional unit ([`Inst::unit`]).
    unit: Option<Unit>,
    /// The shared unit slot (`UNIT_*`) the instruction occupies, if any.
    unit_slot: Option<(usize, Stall)>,
    /// Extra issue cycles reading its operands ([`register_bank_conflicts`]).
    bank_extra: u8,
    /// Its events for the energy model, before lanes.
    energy: InstEnergy,
}

/// Scoreboard slot layout over every kernel of the program (functions share the
/// caller's registers).
#[derive(Clone, Copy, Debug)]
struct SlotMap {
    preds: u32,
    uregs: u32,
    total: usize,
}

impl SlotMap {
    fn new(p: &Program) -> SlotMap {
        let max = |f: fn(&super::Kernel) -> u32| p.kernels.iter().map(f).max().unwrap_or(0) + 2;
        let r = max(|k| k.num_regs);
        let pr = max(|k| k.num_preds);
        let u = max(|k| k.num_uregs);
        SlotMap {
            preds: r,
            uregs: r + pr,
            total: (r + pr + u) as usize,
        }
    }

    fn slot(&self, file: RegFile, idx: u32) -> Option<u32> {
        match file {
            RegFile::R => Some(idx),
            RegFile::P => Some(self.preds + idx),
            RegFile::Ur => Some(self.uregs + idx),
            RegFile::A => None,
        }
    }

    fn info(&self, inst: &Inst) -> InstInfo {
        let unit = inst.unit();
        let uniform = inst.is_uniform();
        let unit_slot = match unit {
            Unit::Alu | Unit::Mul if uniform => Some((UNIT_UNI, Stall::Dependency)),
            Unit::Mem(Space::Param) => None,
            Unit::Mem(_) => Some((UNIT_MEM, Stall::Memory)),
            Unit::Div => Some((UNIT_SFU, Stall::Dependency)),
            Unit::F64 => Some((UNIT_F64, Stall::Dependency)),
            _ => None,
        };
        let mut i = InstInfo {
            uniform,
            unit: Some(unit),
            unit_slot,
            energy: InstEnergy::of(inst),
            ..InstInfo::default()
        };
        inst.for_each_reg(|a| {
            let Some(s) = self.slot(a.reg.file, a.reg.idx) else {
                return;
            };
            let n = if a.wide { 2 } else { 1 };
            for k in 0..n {
                if usize::from(i.nslots) < i.slots.len() {
                    i.slots[usize::from(i.nslots)] = s + k;
                    i.nslots += 1;
                }
                if a.def && usize::from(i.ndst) < i.dsts.len() {
                    i.dsts[usize::from(i.ndst)] = s + k;
                    i.ndst += 1;
                }
            }
        });
        i
    }
}

/// A warp resident on an SM.
struct Warp {
    state: WarpState,
    cta: usize,
    /// Dispatch order, for greedy-then-oldest.
    age: u64,
    /// Per scoreboard slot: the cycle its pending write completes.
    ready: Vec<u64>,
    /// Per slot: the pending write comes from memory.
    from_mem: Vec<bool>,
    barrier: Option<u32>,
    done: bool,
}

struct Cta {
    info: CtaInfo,
    /// Linear block index (for local memory addresses).
    linear: u64,
    warps: Vec<usize>,
    live: u32,
}

#[derive(Clone, Copy)]
struct Sched {
    busy_until: u64,
    /// Index (into the scheduler's warp list) of the last warp issued.
    last: usize,
    reason: Stall,
    /// When recording: the (kernel, pc) of the warp instruction `reason` came from.
    culprit: Option<(u32, u32)>,
    /// First cycle whose use is not yet counted.
    counted_to: u64,
}

struct Sm {
    warps: Vec<Option<Warp>>,
    ctas: Vec<Option<Cta>>,
    sched: Vec<Sched>,
    /// Per shared unit: the cycle it accepts the next warp instruction.
    unit_free: [u64; NUM_UNITS],
    /// Per warp slot: a lower bound of the cycle its warp can issue next and the reason
    /// it waits, found when it was last seen blocked and kept until it issues or a
    /// barrier opens (unit busy times only grow, so the bound stays valid). Empty and
    /// finished slots hold (MAX, Idle), barrier waiters (MAX, Barrier). A compact
    /// array, so scheduler scans skip blocked warps without touching them.
    hint: Vec<Cell<(u64, Stall)>>,
    /// The next cycle this SM has anything to do.
    wake: u64,
    resident_warps: u64,
    occ_since: u64,
    /// DAC: the affine warp and expansion hardware, for a decoupled kernel.
    dac: Option<SmDac>,
    /// This SM's share of the counters.
    counts: SmStats,
}

/// Everything fixed during a run.
struct Ctx<'a> {
    program: &'a Program,
    prep: &'a Prepared,
    cfg: &'a GpuConfig,
    infos: Vec<Vec<InstInfo>>,
    end_info: InstInfo,
    slots: SlotMap,
    policy: SchedulerKind,
    issue_cycles: u64,
    line: u64,
    /// DAC: the affine warp's replay, for a decoupled kernel.
    plan: Option<Plan>,
}

/// The line-sized segments a warp's access touches, in first-lane order, with the
/// bytes touched in each (span from the lowest to the highest byte). `addrs` of the
/// lanes in `mask`, each access `bytes` long and aligned. Returns the count.
pub fn coalesce(
    addrs: &[u64; WARP],
    mask: u32,
    bytes: u32,
    line: u64,
    out: &mut [(u64, u32); WARP],
) -> usize {
    let mut n = 0;
    let mut lo = [0u64; WARP];
    let mut hi = [0u64; WARP];
    let mut m = mask;
    while m != 0 {
        let l = m.trailing_zeros() as usize;
        m &= m - 1;
        let a = addrs[l];
        let seg = a & !(line - 1);
        let end = a + u64::from(bytes);
        match out[..n].iter().position(|s| s.0 == seg) {
            Some(i) => {
                lo[i] = lo[i].min(a);
                hi[i] = hi[i].max(end);
            }
            None => {
                out[n] = (seg, 0);
                lo[n] = a;
                hi[n] = end;
                n += 1;
            }
        }
    }
    for i in 0..n {
        out[i].1 = (hi[i] - lo[i]).min(line) as u32;
    }
    n
}

/// Extra cycles a vector instruction takes to read its source registers from a
/// register file of `banks` banks (`%rN` in bank `N mod banks`, both halves of a pair
/// counted): each bank delivers one register per cycle, so the bank holding the most
/// distinct sources adds one cycle per register beyond the first. Uniform-datapath
/// instructions, and `banks` 0, add none. Predicate and uniform/affine registers are
/// other files.
pub fn register_bank_conflicts(inst: &Inst, banks: u32) -> u32 {
    if banks == 0 {
        return 0;
    }
    let mut sources: [u32; 16] = [0; 16];
    let mut n = 0;
    inst.for_each_reg(|a| {
        if a.def || a.reg.file != RegFile::R {
            return;
        }
        for r in [a.reg.idx, a.reg.idx + 1]
            .into_iter()
            .take(1 + usize::from(a.wide))
        {
            if n < sources.len() && !sources[..n].contains(&r) {
                sources[n] = r;
                n += 1;
            }
        }
    });
    let mut per_bank = [0u32; 64];
    let banks = banks.min(64);
    for &r in &sources[..n] {
        per_bank[(r % banks) as usize] += 1;
    }
    per_bank.iter().max().map_or(0, |&m| m.saturating_sub(1))
}

/// [`register_bank_conflicts`] of a vector instruction (0 on the uniform datapath).
fn vector_bank_conflicts(inst: &Inst, banks: u32) -> u8 {
    if inst.is_uniform() {
        return 0;
    }
    register_bank_conflicts(inst, banks).min(u32::from(u8::MAX)) as u8
}

/// The degree of a shared-memory access's bank conflict: the most distinct 4-byte
/// words any one of the 32 banks must deliver (1 = conflict free; lanes reading the
/// same word share it, a broadcast). 0 when no lane accesses.
pub fn bank_conflict_degree(addrs: &[u64; WARP], mask: u32, bytes: u32) -> u32 {
    let mut words = [0u64; 2 * WARP];
    let mut n = 0;
    let mut m = mask;
    while m != 0 {
        let l = m.trailing_zeros() as usize;
        m &= m - 1;
        let first = addrs[l] / 4;
        let last = (addrs[l] + u64::from(bytes.max(1)) - 1) / 4;
        for w in first..=last.min(first + 1) {
            words[n] = w;
            n += 1;
        }
    }
    let words = &mut words[..n];
    words.sort_unstable();
    let mut per_bank = [0u32; SHARED_BANKS as usize];
    let mut prev = None;
    for &w in words.iter() {
        if prev != Some(w) {
            per_bank[(w % SHARED_BANKS) as usize] += 1;
            prev = Some(w);
        }
    }
    per_bank.iter().copied().max().unwrap_or(0)
}

/// The memory system the timing model builds for `cfg` (caches, L2 banks and their
/// request rate, miss registers, DRAM): public so that a static cost model can read
/// the same figures the simulator runs with.
pub fn mem_config(cfg: &GpuConfig) -> MemConfig {
    let l1 = CacheConfig {
        size_bytes: cfg.l1_size,
        ways: cfg.l1_assoc,
        line_bytes: cfg.line_size,
        // Fermi's L1 does not keep global stores: they go on to the L2.
        write_policy: WritePolicy::WriteThroughNoAllocate,
    };
    MemConfig {
        l1: vec![l1; cfg.num_sms as usize],
        l2: CacheConfig {
            size_bytes: cfg.l2_size,
            ways: cfg.l2_assoc,
            line_bytes: cfg.line_size,
            write_policy: WritePolicy::WriteBackAllocate,
        },
        l2_hit_latency: cfg.l2_latency,
        l2_banks: cfg.l2_partitions.max(1),
        l2_port_cycles: 1,
        l1_mshrs: cfg.l1_mshrs,
        l2_mshrs: 0,
        dram: DramConfig {
            latency: cfg.dram_latency,
            bytes_per_cycle: f64::from(cfg.dram_bytes_per_cycle),
            channels: cfg.l2_partitions.max(1),
        },
    }
}

/// Runs the launch on the timing model. Global memory holds the results afterwards,
/// as after [`super::run_functional`].
pub fn run_timing(
    program: &Program,
    launch: &Launch,
    mem: &mut GlobalMemory,
    config: &GpuConfig,
    limits: Limits,
    scheduler: SchedulerKind,
) -> Result<TimingReport, GpuFault> {
    run_timing_recorded(program, launch, mem, config, limits, scheduler, None)
}

/// The names of the stall reasons, in the order a [`crate::record::Profile`] of a
/// timing run indexes them (the `stall_*` statistics).
pub const STALL_NAMES: [&str; 5] = ["memory", "dependency", "barrier", "queue", "idle"];

/// [`run_timing`] that also records into `recorder` when given ([`crate::record`]):
/// every warp instruction per (kernel, pc), the path of warp
/// [`crate::record::Trace::unit`], and each stalled scheduler cycle, charged with
/// its reason ([`STALL_NAMES`]) to the next instruction of the warp that gave the
/// reason (idle cycles with no warp to blame go to
/// [`crate::record::Profile::elsewhere`]).
pub fn run_timing_recorded(
    program: &Program,
    launch: &Launch,
    mem: &mut GlobalMemory,
    config: &GpuConfig,
    limits: Limits,
    scheduler: SchedulerKind,
    mut recorder: Option<&mut Recorder>,
) -> Result<TimingReport, GpuFault> {
    let mut prep = prepare(program, launch)?;
    prep.dac = super::affine::trace_for(program, prep.entry, launch, limits.max_warp_insts, true)?;
    let kernel = &program.kernels[prep.entry as usize];
    let plan = match (&prep.dac, kernel.affine.as_deref()) {
        (Some(t), Some(k)) => Some(super::timing_dac::plan(t, k)),
        _ => None,
    };
    let bad = |m: String| GpuFault::launch(&launch.kernel, m);
    config
        .validate()
        .map_err(|e| bad(format!("configuration: {e}")))?;
    if config.warp_size as usize != WARP {
        return Err(bad(format!(
            "warp size {} (the simulator runs 32-lane warps)",
            config.warp_size
        )));
    }
    let occ = occupancy(config, BlockResources::of(kernel, prep.threads_per_block))
        .map_err(|e| bad(e.to_string()))?;
    let mut memsys = MemorySystem::new(mem_config(config)).map_err(|e| bad(e.to_string()))?;
    let slots = SlotMap::new(program);
    let ctx = Ctx {
        program,
        prep: &prep,
        cfg: config,
        infos: program
            .kernels
            .iter()
            .map(|k| {
                k.insts
                    .iter()
                    .map(|i| InstInfo {
                        bank_extra: vector_bank_conflicts(i, config.register_banks),
                        ..slots.info(i)
                    })
                    .collect()
            })
            .collect(),
        end_info: InstInfo::default(),
        slots,
        policy: scheduler,
        issue_cycles: u64::from((config.warp_size / config.simt_lanes_per_scheduler.max(1)).max(1)),
        line: u64::from(config.line_size),
        plan,
    };
    let nsched = config.schedulers_per_sm.max(1) as usize;
    let blocks_per_sm = occ.blocks_per_sm as usize;
    let warp_slots = blocks_per_sm * prep.warps_per_block as usize;
    let mut dacs = Vec::new();
    for _ in 0..config.num_sms {
        dacs.push(match ctx.plan {
            Some(_) => Some(SmDac::new(config, warp_slots, blocks_per_sm).map_err(bad)?),
            None => None,
        });
    }
    let mut sms: Vec<Sm> = dacs
        .into_iter()
        .map(|dac| Sm {
            warps: (0..warp_slots).map(|_| None).collect(),
            ctas: (0..blocks_per_sm).map(|_| None).collect(),
            sched: vec![
                Sched {
                    busy_until: 0,
                    // LRR starts at warp 0 (last + 1 wraps to 0); GTO sees no last warp.
                    last: usize::MAX,
                    reason: Stall::Idle,
                    culprit: None,
                    counted_to: 0,
                };
                nsched
            ],
            unit_free: [0; NUM_UNITS],
            hint: vec![Cell::new((u64::MAX, Stall::Idle)); warp_slots],
            wake: 0,
            resident_warps: 0,
            occ_since: 0,
            dac,
            counts: SmStats::default(),
        })
        .collect();
    let mut stats = Stats {
        theoretical_occupancy: occ.occupancy,
        blocks: prep.num_ctas,
        ..Stats::default()
    };
    let mut env = Env {
        program,
        codes: &prep.codes,
        entry: prep.entry,
        params: &launch.params,
        global: mem,
    };
    let mut run = Run {
        ctx: &ctx,
        memsys: &mut memsys,
        stats: &mut stats,
        trace: StepBuffers::default(),
        next_cta: 0,
        finished_ctas: 0,
        next_age: 0,
        recorder: recorder.as_deref_mut(),
    };
    crate::progress::report(0, prep.num_ctas);
    // Initial dispatch: one block per SM in turn until the SMs are full.
    loop {
        let before = run.next_cta;
        for (i, sm) in sms.iter_mut().enumerate() {
            run.dispatch_one(sm, i, 0);
        }
        if run.next_cta == before {
            break;
        }
    }
    let mut now = 0u64;
    let mut progress = Progress::default();
    let mut next_report = 0u64;
    loop {
        if now >= next_report {
            crate::progress::report_cycles(now);
            next_report = now + (1 << 16);
        }
        let mut next = u64::MAX;
        let mut busy = false;
        for (i, sm) in sms.iter_mut().enumerate() {
            if sm.wake <= now {
                let before = Snapshot::of(run.stats);
                run.cycle(sm, i, now, &mut env, limits)?;
                while run.dispatch_one(sm, i, now) {}
                sm.counts.add_since(before, run.stats);
            }
            busy |= sm.resident_warps > 0;
            next = next.min(sm.wake);
        }
        if !busy && run.next_cta >= prep.num_ctas {
            break;
        }
        now = (now + 1).max(next);
        let stuck = progress.stuck(run.stats, now);
        if now > limits.max_cycles || stuck {
            let (cta, warp) = sms
                .iter()
                .flat_map(|sm| sm.warps.iter().flatten().map(move |w| (sm, w)))
                .find(|(_, w)| !w.done)
                .map(|(sm, w)| {
                    (
                        sm.ctas[w.cta].as_ref().map(|c| c.info.clone()),
                        w.state.clone(),
                    )
                })
                .unwrap_or((None, WarpState::new(kernel, prep.entry, 0, prep.block)));
            let info = cta.unwrap_or_else(|| prep.new_cta(program, 0).0);
            return Err(runaway(
                program,
                &info,
                &warp,
                if stuck {
                    format!(
                        "no warp issued an instruction in {STUCK_CYCLES} cycles: the machine \
                         is stuck (a deadlock of the timing model's queues or locks)"
                    )
                } else {
                    format!("more than {} cycles", limits.max_cycles)
                },
            ));
        }
    }
    // The run ends when the last issue slot in use ends.
    let cycles = sms
        .iter()
        .flat_map(|sm| sm.sched.iter().map(|s| s.counted_to))
        .fold(now, u64::max);
    for sm in sms.iter_mut() {
        let before = Snapshot::of(&stats);
        for s in sm.sched.iter_mut() {
            if cycles > s.counted_to {
                charge_stall(
                    &mut stats,
                    recorder.as_deref_mut(),
                    s,
                    cycles - s.counted_to,
                );
                s.counted_to = cycles;
            }
        }
        stats.warp_cycles += sm.resident_warps * (cycles - sm.occ_since);
        sm.counts.warp_cycles += sm.resident_warps * (cycles - sm.occ_since);
        sm.counts.add_since(before, &stats);
    }
    stats.cycles = cycles;
    if ctx.plan.is_some() {
        let mut t = DacTotals::default();
        sms.iter()
            .filter_map(|sm| sm.dac.as_ref())
            .for_each(|d| d.add_to(&mut t));
        dac_stats(&mut stats, &t);
    }
    stats.achieved_occupancy = if cycles == 0 {
        0.0
    } else {
        stats.warp_cycles as f64
            / (cycles as f64 * f64::from(config.num_sms) * f64::from(config.max_warps_per_sm))
    };
    for i in 0..memsys.num_l1() {
        if let Some(s) = memsys.l1_stats(i) {
            stats.l1_accesses += s.accesses();
            stats.l1_hits += s.hits();
            if let Some(sm) = sms.get_mut(i) {
                sm.counts.l1_accesses = s.accesses();
                sm.counts.l1_hits = s.hits();
            }
        }
    }
    let l2 = *memsys.l2_stats();
    stats.l2_accesses = l2.accesses();
    stats.l2_hits = l2.hits();
    let d = memsys.dram_stats();
    stats.dram_reads = d.reads;
    stats.dram_writes = d.writes;
    stats.dram_bytes = d.bytes;
    memory_events(&mut stats, &memsys);
    stats.energy = Energy::of(&stats.events, cycles, &config.energy_table());
    Ok(TimingReport {
        cycles,
        warp_insts: stats.warp_insts,
        thread_insts: stats.thread_insts,
        pairs: stats.pairs(),
        stats,
        per_sm: sms.iter().map(|sm| sm.counts).collect(),
    })
}

/// The mutable state of a run besides the SMs.
struct Run<'a, 'c> {
    ctx: &'c Ctx<'a>,
    memsys: &'c mut MemorySystem,
    stats: &'c mut Stats,
    trace: StepBuffers,
    next_cta: u64,
    /// Blocks that ran to their end (for [`crate::progress`]).
    finished_ctas: u64,
    next_age: u64,
    recorder: Option<&'c mut Recorder>,
}

/// Counts `cycles` of scheduler `s`'s stall, and records them when recording.
fn charge_stall(stats: &mut Stats, recorder: Option<&mut Recorder>, s: &Sched, cycles: u64) {
    stats.add_stall(s.reason, cycles);
    if let Some(p) = recorder.and_then(|r| r.profile.as_mut()) {
        p.stalled(s.culprit, u32::MAX, s.reason as usize, cycles);
    }
}

/// What keeps a warp from issuing, and until when.
enum Block {
    Ready,
    Wait(Stall, u64),
    Done,
}

impl Run<'_, '_> {
    /// Places the next block on `sm` if a block slot is free; true when it did.
    fn dispatch_one(&mut self, sm: &mut Sm, _id: usize, now: u64) -> bool {
        let prep = self.ctx.prep;
        if self.next_cta >= prep.num_ctas {
            return false;
        }
        let Some(slot) = sm.ctas.iter().position(Option::is_none) else {
            return false;
        };
        let (info, states) = prep.new_cta(self.ctx.program, self.next_cta);
        let wpb = prep.warps_per_block as usize;
        let mut warps = Vec::with_capacity(wpb);
        for (k, state) in states.into_iter().enumerate() {
            let ws = slot * wpb + k;
            sm.warps[ws] = Some(Warp {
                state,
                cta: slot,
                age: self.next_age,
                ready: vec![0; self.ctx.slots.total],
                from_mem: vec![false; self.ctx.slots.total],
                barrier: None,
                done: false,
            });
            sm.hint[ws].set((0, Stall::Idle));
            self.next_age += 1;
            warps.push(ws);
        }
        sm.ctas[slot] = Some(Cta {
            info,
            linear: self.next_cta,
            warps,
            live: wpb as u32,
        });
        self.next_cta += 1;
        sm.counts.blocks += 1;
        self.occupancy_change(sm, now, wpb as i64);
        sm.wake = sm.wake.min(now + 1);
        true
    }

    fn occupancy_change(&mut self, sm: &mut Sm, now: u64, delta: i64) {
        let resident_cycles = sm.resident_warps * now.saturating_sub(sm.occ_since);
        self.stats.warp_cycles += resident_cycles;
        sm.counts.warp_cycles += resident_cycles;
        sm.occ_since = now;
        sm.resident_warps = (sm.resident_warps as i64 + delta).max(0) as u64;
    }

    fn info(&self, w: &Warp) -> InstInfo {
        match w.state.next_pc() {
            Some((code, pc)) => self.ctx.infos[code as usize]
                .get(pc as usize)
                .copied()
                .unwrap_or(self.ctx.end_info),
            None => self.ctx.end_info,
        }
    }

    fn inst(&self, w: &Warp) -> Option<Inst> {
        let (code, pc) = w.state.next_pc()?;
        self.ctx.program.kernels[code as usize]
            .insts
            .get(pc as usize)
            .copied()
    }

    /// Whether warp `w` can issue at `now`.
    fn blocked(&self, sm: &Sm, w: &Warp, ws: usize, now: u64) -> Block {
        if w.done {
            return Block::Done;
        }
        if w.barrier.is_some() {
            return Block::Wait(Stall::Barrier, u64::MAX);
        }
        match self.blocked_now(sm, w, now) {
            Block::Ready => {}
            b => return b,
        }
        if let Some(d) = sm.dac.as_ref() {
            let need = self.inst(w).and_then(|i| deq_need(&i));
            if need.is_some_and(|n| d.deq_blocked(n, ws)) {
                return Block::Wait(Stall::Queue, now + 1);
            }
        }
        Block::Ready
    }

    /// [`Self::blocked`] without the cached bound.
    fn blocked_now(&self, sm: &Sm, w: &Warp, now: u64) -> Block {
        let info = self.info(w);
        let mut until = 0;
        let mut mem = false;
        for &s in &info.slots[..usize::from(info.nslots)] {
            let r = w.ready[s as usize];
            if r > now {
                until = until.max(r);
                mem |= w.from_mem[s as usize];
            }
        }
        if until > now {
            return Block::Wait(
                if mem {
                    Stall::Memory
                } else {
                    Stall::Dependency
                },
                until,
            );
        }
        if let Some((u, stall)) = info.unit_slot {
            if sm.unit_free[u] > now {
                return Block::Wait(stall, sm.unit_free[u]);
            }
        }
        Block::Ready
    }

    /// One cycle of an SM: each free scheduler issues one warp instruction.
    fn cycle(
        &mut self,
        sm: &mut Sm,
        id: usize,
        now: u64,
        env: &mut Env<'_>,
        limits: Limits,
    ) -> Result<(), GpuFault> {
        let nsched = sm.sched.len();
        let nslots = sm.warps.len();
        let mut wake = u64::MAX;
        self.dac_cycle(sm, id, now)?;
        for s in 0..nsched {
            let mut sc = sm.sched[s];
            if sc.busy_until > now {
                wake = wake.min(sc.busy_until);
                continue;
            }
            if now > sc.counted_to {
                charge_stall(
                    self.stats,
                    self.recorder.as_deref_mut(),
                    &sc,
                    now - sc.counted_to,
                );
            }
            if s == 0 && self.affine_issue(sm, now) {
                // The affine warp took the first scheduler's slot.
                let cost = self.ctx.issue_cycles;
                sc.busy_until = now + cost;
                sc.counted_to = now + cost;
                self.stats.issue_cycles += cost;
                wake = wake.min(now + cost);
                sm.sched[s] = sc;
                continue;
            }
            // This scheduler's warp slots are s, s + nsched, s + 2 * nsched, ...
            let count = (nslots + nsched - 1 - s) / nsched;
            let slot_of = |k: usize| s + k * nsched;
            let mut chosen = None;
            let mut reason = Stall::Idle;
            let mut earliest = u64::MAX;
            let mut consider = |k: usize, sm: &Sm| -> bool {
                let hint = &sm.hint[slot_of(k)];
                let (nb, why) = hint.get();
                if nb > now {
                    if nb != u64::MAX || why != Stall::Idle {
                        reason = worse(reason, why);
                        earliest = earliest.min(nb);
                    }
                    return false;
                }
                let Some(w) = sm.warps[slot_of(k)].as_ref() else {
                    hint.set((u64::MAX, Stall::Idle));
                    return false;
                };
                match self.blocked(sm, w, slot_of(k), now) {
                    Block::Ready => true,
                    Block::Done => {
                        hint.set((u64::MAX, Stall::Idle));
                        false
                    }
                    Block::Wait(r, until) => {
                        hint.set((until, r));
                        reason = worse(reason, r);
                        earliest = earliest.min(until);
                        false
                    }
                }
            };
            match self.ctx.policy {
                SchedulerKind::Lrr => {
                    for j in 1..=count {
                        let k = sc.last.wrapping_add(j) % count;
                        if consider(k, sm) {
                            chosen = Some(k);
                            break;
                        }
                    }
                }
                SchedulerKind::Gto => {
                    if sc.last < count && consider(sc.last, sm) {
                        chosen = Some(sc.last);
                    } else {
                        let mut best: Option<(u64, usize)> = None;
                        for k in 0..count {
                            if k != sc.last && consider(k, sm) {
                                let age = sm.warps[slot_of(k)].as_ref().map_or(u64::MAX, |w| w.age);
                                if best.is_none_or(|(a, _)| age < a) {
                                    best = Some((age, k));
                                }
                            }
                        }
                        chosen = best.map(|(_, k)| k);
                    }
                }
            }
            match chosen {
                Some(k) => {
                    sc.last = k;
                    let cost = self.issue(sm, id, slot_of(k), now, env, limits)?;
                    sc.busy_until = now + cost;
                    sc.counted_to = now + cost;
                    self.stats.issue_cycles += cost;
                    wake = wake.min(now + cost);
                }
                None => {
                    sc.reason = reason;
                    if self.recorder.is_some() {
                        sc.culprit = culprit(sm, (0..count).map(slot_of), reason);
                    }
                    sc.counted_to = now + 1;
                    charge_stall(self.stats, self.recorder.as_deref_mut(), &sc, 1);
                    wake = wake.min(earliest);
                }
            }
            sm.sched[s] = sc;
        }
        sm.wake = wake.max(now + 1);
        if let (Some(d), Some(p)) = (sm.dac.as_ref(), self.ctx.plan.as_ref()) {
            if d.busy(p) {
                sm.wake = now + 1;
            }
        }
        Ok(())
    }

    /// DAC, once per SM cycle: ends a finished batch, starts one on the resident
    /// blocks, and advances the expansion units and early requests.
    fn dac_cycle(&mut self, sm: &mut Sm, id: usize, now: u64) -> Result<(), GpuFault> {
        let (Some(d), Some(plan)) = (sm.dac.as_mut(), self.ctx.plan.as_ref()) else {
            return Ok(());
        };
        if d.running && d.batch_over(plan) {
            d.running = false;
        }
        if !d.running {
            // The next batch: the resident blocks no batch has served yet (blocks
            // join the SM whenever a block slot frees, as in the baseline).
            let blocks: Vec<(usize, [u32; 3], u64)> = sm
                .ctas
                .iter()
                .enumerate()
                .filter_map(|(i, c)| c.as_ref().map(|c| (i, c.info.ctaid, c.linear)))
                .filter(|&(i, _, linear)| !d.is_served(i, linear))
                .collect();
            let resident = sm.ctas.iter().filter(|c| c.is_some()).count();
            let more = self.next_cta < self.ctx.prep.num_ctas;
            if d.may_start_batch(blocks.len(), resident, more) {
                let prep = self.ctx.prep;
                d.start_batch(&blocks, prep.block, prep.warps_per_block as usize)
                    .map_err(|m| {
                        GpuFault::launch(&self.ctx.program.kernels[prep.entry as usize].name, m)
                    })?;
            }
        }
        d.tick(now, self.memsys, id);
        Ok(())
    }

    /// DAC: issues the affine warp's next instruction on the SM's first scheduler
    /// when it can; true when it did.
    fn affine_issue(&mut self, sm: &mut Sm, now: u64) -> bool {
        let (Some(d), Some(plan)) = (sm.dac.as_mut(), self.ctx.plan.as_ref()) else {
            return false;
        };
        d.issue_affine(plan, now, u64::from(self.ctx.cfg.alu_latency)) == Some(true)
    }

    /// Issues the next instruction of warp slot `ws`; returns its issue cost.
    fn issue(
        &mut self,
        sm: &mut Sm,
        sm_id: usize,
        ws: usize,
        now: u64,
        env: &mut Env<'_>,
        limits: Limits,
    ) -> Result<u64, GpuFault> {
        let ctx = self.ctx;
        let cfg = ctx.cfg;
        let (info, inst, cta_slot) = {
            let w = sm.warps[ws].as_ref().expect("issued warp exists");
            (self.info(w), self.inst(w), w.cta)
        };
        let cta = sm.ctas[cta_slot].as_mut().expect("block of a warp");
        let warp = sm.warps[ws].as_mut().expect("issued warp exists");
        if self.stats.warp_insts >= limits.max_warp_insts {
            return Err(runaway(
                ctx.program,
                &cta.info,
                &warp.state,
                format!("more than {} warp instructions", limits.max_warp_insts),
            ));
        }
        sm.hint[ws].set((0, Stall::Idle));
        let active = warp.state.active_mask();
        let executing = active & guard_lanes(&warp.state, inst.and_then(|i| i.guard));
        if let (Some(d), Some(need)) = (sm.dac.as_mut(), inst.and_then(|i| deq_need(&i))) {
            d.deq(need, ws, now, self.memsys, sm_id);
            match need {
                DeqNeed::Pred => self.stats.deq_pred_insts += 1,
                DeqNeed::Addr { data: true } => {
                    self.stats.deq_data_insts += 1;
                    // A drain (every lane off) pops its entry but loads nothing: only
                    // loads that access memory count, as in `global_load_insts`.
                    if executing != 0 {
                        self.stats.decoupled_load_insts += 1;
                    }
                }
                DeqNeed::Addr { data: false } => self.stats.deq_addr_insts += 1,
            }
        }
        if let Some(r) = self.recorder.as_deref_mut() {
            let unit =
                cta.linear * u64::from(ctx.prep.warps_per_block) + u64::from(warp.state.warp_id);
            record_warp_inst(r, ctx.program, unit, &warp.state);
        }
        warp.state.clock = now; // `%clock64` reads the SM's cycle at issue
        let flow = step(env, &mut warp.state, &mut cta.info, &mut self.trace)?;
        self.stats.warp_insts += 1;
        self.stats.thread_insts += u64::from(active.count_ones());
        let lanes = if info.uniform {
            Lanes::Scalar
        } else {
            Lanes::Vector {
                active: active.count_ones(),
                warp: cfg.warp_size,
            }
        };
        self.stats.events.issue(&info.energy, lanes);
        let unit = info.unit.unwrap_or(Unit::Ctrl);
        let mut from_mem = false;
        let latency = match unit {
            Unit::Alu | Unit::Mul if info.uniform => {
                sm.unit_free[UNIT_UNI] = now + u64::from(cfg.uniform_issue_cycles.max(1));
                u64::from(cfg.uniform_latency)
            }
            Unit::Warp if matches!(inst.map(|i| i.op), Some(Op::Shfl { .. })) => {
                u64::from(cfg.shfl_latency)
            }
            Unit::Alu | Unit::Ctrl | Unit::Warp | Unit::Queue => u64::from(cfg.alu_latency),
            Unit::Mul => u64::from(cfg.mul_latency),
            Unit::F64 => {
                sm.unit_free[UNIT_F64] = now + F64_INTERVAL;
                u64::from(cfg.f64_latency)
            }
            Unit::Div => {
                sm.unit_free[UNIT_SFU] = now + SFU_INTERVAL;
                let sqrt = matches!(inst.map(|i| i.op), Some(Op::Un { .. }));
                u64::from(if sqrt {
                    cfg.sfu_latency
                } else {
                    cfg.div_latency
                })
            }
            Unit::Mem(Space::Param) => u64::from(cfg.alu_latency),
            Unit::Mem(_) if !self.trace.trace.valid || self.trace.trace.mask == 0 => {
                u64::from(cfg.alu_latency)
            }
            Unit::Mem(space) => {
                from_mem = true;
                let linear = cta.linear;
                self.memory(
                    sm_id,
                    &mut sm.unit_free[UNIT_MEM],
                    space,
                    linear,
                    warp.state.warp_id,
                    now,
                )
            }
        };
        let done_at = now + latency.max(1);
        for &d in &info.dsts[..usize::from(info.ndst)] {
            warp.ready[d as usize] = done_at;
            warp.from_mem[d as usize] = from_mem;
        }
        let cost = if info.uniform {
            self.stats.uniform_insts += 1;
            1
        } else {
            self.stats.vector_thread_insts += u64::from(executing.count_ones());
            self.stats.register_bank_conflicts += u64::from(info.bank_extra);
            ctx.issue_cycles + u64::from(info.bank_extra)
        };
        match flow {
            Flow::Continue => {}
            Flow::Barrier(id) => {
                warp.barrier = Some(id);
                sm.hint[ws].set((u64::MAX, Stall::Barrier));
                self.try_release(sm, cta_slot)?;
            }
            Flow::Done => {
                warp.done = true;
                sm.hint[ws].set((u64::MAX, Stall::Idle));
                let c = sm.ctas[cta_slot].as_mut().expect("block");
                c.live -= 1;
                if c.live == 0 {
                    if sm.dac.is_some() {
                        let name = &ctx.program.kernels[ctx.prep.entry as usize].name;
                        for &w in &c.warps {
                            if let Some(wp) = sm.warps[w].as_ref() {
                                super::affine::check_drained(&wp.state, name, c.info.ctaid)?;
                            }
                        }
                    }
                    let c = sm.ctas[cta_slot].take().expect("block");
                    for &w in &c.warps {
                        sm.warps[w] = None;
                    }
                    self.finished_ctas += 1;
                    crate::progress::report(self.finished_ctas, ctx.prep.num_ctas);
                    self.occupancy_change(sm, now, -(c.warps.len() as i64));
                } else {
                    self.try_release(sm, cta_slot)?;
                }
            }
        }
        Ok(cost)
    }

    /// Opens the block's barrier when every unfinished warp waits at the same one.
    fn try_release(&mut self, sm: &mut Sm, cta_slot: usize) -> Result<(), GpuFault> {
        let cta = sm.ctas[cta_slot].as_ref().expect("block");
        let mut id: Option<u32> = None;
        for &w in &cta.warps {
            let warp = sm.warps[w].as_ref().expect("warp of a live block");
            if warp.done {
                continue;
            }
            match (warp.barrier, id) {
                (None, _) => return Ok(()),
                (Some(b), None) => id = Some(b),
                (Some(b), Some(a)) if a != b => {
                    return Err(deadlock(self.ctx.program, &cta.info, &warp.state, (a, b)));
                }
                _ => {}
            }
        }
        for &w in &cta.warps {
            if let Some(warp) = sm.warps[w].as_mut() {
                warp.barrier = None;
                if !warp.done {
                    sm.hint[w].set((0, Stall::Idle));
                }
            }
        }
        let linear = sm.ctas[cta_slot].as_ref().map_or(u64::MAX, |c| c.linear);
        if let Some(d) = sm.dac.as_mut() {
            d.block_passed_barrier(cta_slot, linear);
        }
        Ok(())
    }

    /// Times the memory access in `self.trace`; returns the latency of its result.
    fn memory(
        &mut self,
        sm_id: usize,
        ldst_free: &mut u64,
        space: Space,
        cta_linear: u64,
        warp_id: u32,
        now: u64,
    ) -> u64 {
        let cfg = self.ctx.cfg;
        let t = &self.trace.trace;
        let start = now.max(*ldst_free);
        if space == Space::Shared {
            let degree = u64::from(bank_conflict_degree(&t.addrs, t.mask, t.bytes).max(1));
            self.stats.shared_insts += 1;
            self.stats.shared_bank_conflicts += degree - 1;
            self.stats.events.shared_accesses += degree;
            *ldst_free = start + degree;
            return start - now + u64::from(cfg.shared_mem_latency) + degree - 1;
        }
        let mut addrs = t.addrs;
        if space == Space::Local {
            // Interleaved as CUDA lays out local memory: word k of consecutive threads
            // is contiguous, so uniform local accesses coalesce.
            let total = self.ctx.prep.num_ctas * u64::from(self.ctx.prep.threads_per_block);
            for (l, a) in addrs.iter_mut().enumerate() {
                let thread = cta_linear * u64::from(self.ctx.prep.threads_per_block)
                    + u64::from(warp_id) * WARP as u64
                    + l as u64;
                *a = LOCAL_BASE + ((*a / 4) * total + thread) * 4 + *a % 4;
            }
        }
        let mut segs = [(0u64, 0u32); WARP];
        let n = coalesce(&addrs, t.mask, t.bytes, self.ctx.line, &mut segs);
        let kind = if t.write && !t.atomic {
            AccessKind::Write
        } else {
            AccessKind::Read
        };
        let (write, atomic) = (t.write, t.atomic);
        let mut ready = start;
        for (k, &(seg, bytes)) in segs[..n].iter().enumerate() {
            let at = start + k as u64;
            // Atomics are performed at the L2 (past the last L1: the uncached path).
            let l1 = if atomic { usize::MAX } else { sm_id };
            let o = self.memsys.access(l1, seg, bytes, kind, at);
            if atomic {
                self.memsys
                    .access(l1, seg, bytes, AccessKind::Write, o.ready);
            }
            ready = ready.max(o.ready);
        }
        *ldst_free = start + n as u64;
        let s = &mut *self.stats;
        match (space, write, atomic) {
            (Space::Local, ..) => {
                s.local_transactions += n as u64;
                if write {
                    s.local_store_insts += 1;
                } else {
                    s.local_load_insts += 1;
                }
            }
            (_, _, true) => {
                s.global_atomic_insts += 1;
                s.global_atomic_transactions += n as u64;
            }
            (_, true, _) => {
                s.global_store_insts += 1;
                s.global_store_transactions += n as u64;
            }
            _ => {
                s.global_load_insts += 1;
                s.global_load_lanes += u64::from(t.mask.count_ones());
                s.global_load_transactions += n as u64;
            }
        }
        ready - now + u64::from(cfg.l1_latency)
    }
}

/// The next instruction of the first warp among `slots` held back by `reason`: the
/// instruction a stalled scheduler cycle is charged to in a profile.
fn culprit(sm: &Sm, slots: impl Iterator<Item = usize>, reason: Stall) -> Option<(u32, u32)> {
    slots
        .filter(|&k| sm.hint[k].get().1 == reason)
        .find_map(|k| sm.warps[k].as_ref().filter(|w| !w.done)?.state.next_pc())
}

/// The more telling of two stall reasons: memory, then dependency, barrier, idle.
fn worse(a: Stall, b: Stall) -> Stall {
    let rank = |s: Stall| match s {
        Stall::Memory => 3,
        Stall::Dependency => 2,
        Stall::Barrier => 1,
        Stall::Queue => 2,
        Stall::Idle => 0,
    };
    if rank(b) > rank(a) {
        b
    } else {
        a
    }
}

/// Copies the memory system's counts the energy model prices into `s.events`.
fn memory_events(s: &mut Stats, memsys: &MemorySystem) {
    let e = &mut s.events;
    for i in 0..memsys.num_l1() {
        if let Some(c) = memsys.l1_stats(i) {
            e.add_l1(c);
        }
    }
    e.set_l2_and_dram(memsys.l2_stats(), &memsys.dram_stats());
    e.noc_flits = memsys.noc_flits();
}

/// Copies the DAC hardware's totals into the run's statistics.
fn dac_stats(s: &mut Stats, t: &DacTotals) {
    s.affine_warp_insts = t.affine_insts;
    dac_events(s, t);
    s.enq_entries = t.atq.pushes;
    s.enq_stall_cycles = t.enq_stall_cycles;
    s.atq_mean_occupancy = t.atq.mean_occupancy();
    s.pwaq_mean_occupancy = t.pwaq.mean_occupancy();
    s.pwpq_mean_occupancy = t.pwpq.mean_occupancy();
    s.pwaq_max_occupancy = u64::from(t.pwaq.max_occupancy);
    s.expand_stall_queue_full = t.engine.stall_queue_full;
    s.expand_stall_barrier = t.engine.stall_barrier;
    s.expand_stall_l1 = t.engine.stall_l1;
    s.early_mshr_wait = t.mshr_wait_cycles;
    s.dac_batches = t.batches;
    s.prefetch_dropped = t.dropped;
    s.early_requests = t.prefetch.requests;
    s.prefetched_lines_used = t.prefetch.lines;
    s.prefetch_lead_sum = t.prefetch.lead_sum;
    s.prefetch_lead_max = t.prefetch.lead_max;
    s.prefetch_unprotected = t.prefetch.unprotected;
}

/// Adds what the DAC hardware did to the energy model's events: the affine warps'
/// instructions, the queues' words and the expansion units' integer operations.
fn dac_events(s: &mut Stats, t: &DacTotals) {
    use super::energy::{ATQ_ENTRY_WORDS, PWAQ_LINE_WORDS, PWPQ_ENTRY_WORDS};
    let e = &mut s.events;
    e.add_issued(&t.affine_events);
    let line_words = t.engine.lines * PWAQ_LINE_WORDS;
    e.queue_words_written +=
        t.atq.pushes * ATQ_ENTRY_WORDS + line_words + t.pwpq.pushes * PWPQ_ENTRY_WORDS;
    e.queue_words_read +=
        t.atq.pops * ATQ_ENTRY_WORDS + line_words + t.pwpq.pops * PWPQ_ENTRY_WORDS;
    e.expand_ops += t.engine.lines
        + t.engine.peu_uniform
        + 2 * t.engine.peu_fast
        + u64::from(t.warp_size) * t.engine.peu_slow;
}

/// Cycles without any issued warp instruction (non-affine or affine) after which a
/// timing run stops as stuck. No latency of the model comes near it (a DRAM access
/// behind a full request queue waits thousands of cycles), so only a deadlock of the
/// model itself (queues, locks, barriers it cannot resolve) reaches it; without it
/// such a run would spin until `max_cycles`.
const STUCK_CYCLES: u64 = 1_000_000;

/// The last cycle at which the issued-instruction count changed.
#[derive(Default)]
struct Progress {
    issued: u64,
    at: u64,
}

impl Progress {
    /// Whether nothing has issued for more than [`STUCK_CYCLES`] up to `now`.
    fn stuck(&mut self, stats: &Stats, now: u64) -> bool {
        let issued = stats.warp_insts + stats.affine_warp_insts;
        if issued != self.issued {
            self.issued = issued;
            self.at = now;
        }
        now - self.at > STUCK_CYCLES
    }
}

#[cfg(test)]
mod progress_tests {
    use super::{Progress, Stats, STUCK_CYCLES};

    #[test]
    fn a_run_is_stuck_only_after_the_limit_without_any_issue() {
        let mut p = Progress::default();
        let mut stats = Stats {
            warp_insts: 5,
            ..Stats::default()
        };
        assert!(!p.stuck(&stats, 10));
        assert!(!p.stuck(&stats, 10 + STUCK_CYCLES));
        assert!(p.stuck(&stats, 11 + STUCK_CYCLES));
        // An affine warp instruction counts as progress too.
        stats.affine_warp_insts = 1;
        assert!(!p.stuck(&stats, 12 + STUCK_CYCLES));
        assert!(!p.stuck(&stats, 12 + 2 * STUCK_CYCLES));
        assert!(p.stuck(&stats, 13 + 2 * STUCK_CYCLES));
    }
}
