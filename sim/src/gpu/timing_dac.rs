//! The DAC side of the timing model (paper §4.1-§4.4): per SM, the affine warp, the
//! expansion engine ([`DacSm`]: ATQ, AEU/PEU, per-warp queues), the early requests of
//! `enq.data` into the SM's L1 with their lock counters ([`LockTable`]) and their
//! follow-up to the `deq.data` that uses them ([`PrefetchTracker`]).
//!
//! What the affine warp computes is known before the run (functional semantics,
//! [`super::affine`]): the timing model replays the launch's affine instruction
//! sequence ([`Plan`]) once per batch of blocks resident on the SM (the paper runs
//! the affine warp once per batch of concurrent warps, §4.1). Blocks join a DAC SM
//! as in the baseline, whenever a block slot frees; a batch is the set of resident
//! blocks no batch has served yet when an affine warp context starts a run
//! ([`DacSm::start_batch_in`]), which it does as soon as a context is free (its
//! previous run's stream done and every entry of its ATQ expanded). With the preset's
//! two contexts a batch starts while the previous one drains. A block that arrives
//! while no context is free waits, its warps stalled at their first `deq`. Warps of
//! earlier batches keep their queues while a new batch starts.
//!
//! The affine warp issues on the SM's first scheduler ahead of the non-affine warps
//! (it is their producer), in order, with its own scoreboard: an instruction waits
//! until the registers it uses are written (`alu_latency` after their producer; the
//! scheduler then serves non-affine warps). An `enq`
//! issues only when [`DacSm::can_enqueue`] (back-pressure). A non-affine warp's `deq`
//! waits (stall reason `queue`) until its queue holds an entry and, for `deq.data`,
//! until every early request of the entry has arrived in L1.
//!
//! Early requests (§4.1 ⑦, §4.2). A finished `enq.data` record's line requests go
//! to the AEU's request buffer and leave it one per cycle; a request whose line is
//! not in L1 waits for a free L1 miss register, so prefetches never book miss
//! registers ahead of the warps' own misses. Each request locks its line's way at
//! issue ([`LockTable`], at most N−1 ways of a set); the L1 never replaces a locked
//! way ([`crate::mem::Cache::set_pinned`]), so the data stays until the `deq.data`
//! that uses it releases the lock. A request whose line cannot be locked is, by
//! `early_unlockable`, fetched without a lock (it may be replaced before its use,
//! like a conventional prefetch) or dropped (not fetched: the warp's `deq.data`
//! then loads the line itself, after the record's other lines have arrived).
//!
//! Batches (`batch_min_share`, [`SmDac::may_start_batch`]): while another context
//! is busy, a batch waits until enough resident blocks are unserved, so that one
//! early block does not take a context for its whole lifetime.

use std::collections::{HashMap, VecDeque};

use super::affine::{AffineEvent, AffineTrace};
use super::config::{EarlyUnlockable, GpuConfig};
use super::dac::{
    AddrTuple, CmpOp, CtaSlot, DacConfig, DacSm, DacStats, EarlyRequest, Enq, IntType, LockTable,
    PredTuple, PrefetchStats, PrefetchTracker, QueueStats, SelAddrTuple,
};
use super::energy::{InstEnergy, Lanes};
use super::isa::{Cmp, Inst, Kernel, Op, RegFile, Type};
use crate::energy::Events;
use crate::mem::{AccessKind, MemorySystem};

/// One step of the affine warp's replay.
#[derive(Clone, Copy, Debug)]
pub(crate) enum AffStep {
    /// An instruction computing on tuples or uniform values.
    Plain,
    /// An `enq` (index into [`Plan::enqs`]).
    Enq(u32),
    Barrier,
}

/// The affine warp's instruction sequence of a launch, with its `enq` tuples and,
/// per step, the registers it reads or writes and those it writes (its scoreboard
/// entries: see [`SmDac::issue_affine`]).
#[derive(Clone, Debug, Default)]
pub(crate) struct Plan {
    pub steps: Vec<AffStep>,
    pub enqs: Vec<Enq>,
    pub regs: Vec<StepRegs>,
    /// Per step: its events for the energy model, before lanes.
    pub energy: Vec<InstEnergy>,
}

/// The scoreboard slots of one affine-warp instruction.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct StepRegs {
    /// Read or written (read after write and write after write).
    pub used: Vec<u32>,
    pub written: Vec<u32>,
}

/// The registers `inst` reads or writes, as scoreboard slots (file, index; a pair
/// takes two).
fn step_regs(inst: &Inst) -> StepRegs {
    let mut r = StepRegs::default();
    inst.for_each_reg(|a| {
        let file = match a.reg.file {
            RegFile::R => 0u32,
            RegFile::P => 1,
            RegFile::Ur => 2,
            RegFile::A => 3,
        };
        let n = if a.wide { 2 } else { 1 };
        for k in 0..n {
            let slot = file << 16 | (a.reg.idx + k);
            r.used.push(slot);
            if a.def {
                r.written.push(slot);
            }
        }
    });
    r
}

fn cmp_op(c: Cmp) -> Option<CmpOp> {
    Some(match c {
        Cmp::Eq => CmpOp::Eq,
        Cmp::Ne => CmpOp::Ne,
        Cmp::Lt => CmpOp::Lt,
        Cmp::Le => CmpOp::Le,
        Cmp::Gt => CmpOp::Gt,
        Cmp::Ge => CmpOp::Ge,
        _ => return None,
    })
}

fn int_type(t: Type) -> IntType {
    match t {
        Type::S32 => IntType::S32,
        Type::U64 | Type::B64 => IntType::U64,
        Type::S64 => IntType::S64,
        _ => IntType::U32,
    }
}

/// The replay of `trace` (recorded with its pcs) of the affine stream `k`.
pub(crate) fn plan(trace: &AffineTrace, k: &Kernel) -> Plan {
    let mut p = Plan::default();
    let mut events = trace.events.iter();
    for &pc in &trace.pcs {
        let Some(inst) = k.insts.get(pc as usize) else {
            continue;
        };
        let step = match inst.op {
            Op::EnqData { .. }
            | Op::EnqAddr { .. }
            | Op::EnqSel { .. }
            | Op::EnqPred { .. }
            | Op::Bar { .. } => match events.next() {
                Some(AffineEvent::Barrier { .. }) => AffStep::Barrier,
                Some(e) => match enq_of(e) {
                    Some(q) => {
                        p.enqs.push(q);
                        AffStep::Enq(p.enqs.len() as u32 - 1)
                    }
                    None => AffStep::Plain,
                },
                None => AffStep::Plain,
            },
            _ => AffStep::Plain,
        };
        p.steps.push(step);
        p.regs.push(step_regs(inst));
        p.energy.push(InstEnergy::of(inst));
    }
    p
}

fn enq_of(e: &AffineEvent) -> Option<Enq> {
    match e {
        AffineEvent::Addr {
            data,
            bytes,
            wide,
            value,
            sel,
            ..
        } => {
            let t = AddrTuple {
                tuple: value.tuple,
                access_bytes: *bytes,
                wide: *wide,
            };
            Some(match sel {
                Some(s) => {
                    let s = SelAddrTuple {
                        pred: PredTuple {
                            lhs: s.a.tuple,
                            op: cmp_op(s.cmp)?,
                            rhs: s.b.tuple,
                            ty: int_type(s.ty),
                        },
                        then: t,
                        els: s.els.tuple,
                    };
                    if *data {
                        Enq::DataSel(s)
                    } else {
                        Enq::AddrSel(s)
                    }
                }
                None if *data => Enq::Data(t),
                None => Enq::Addr(t),
            })
        }
        AffineEvent::Pred { cmp, ty, a, b, .. } => Some(Enq::Pred(PredTuple {
            lhs: a.tuple,
            op: cmp_op(*cmp)?,
            rhs: b.tuple,
            ty: int_type(*ty),
        })),
        AffineEvent::Barrier { .. } => None,
    }
}

/// What a non-affine instruction needs from the queues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DeqNeed {
    Addr { data: bool },
    Pred,
}

pub(crate) fn deq_need(inst: &Inst) -> Option<DeqNeed> {
    if let Op::DeqPred { .. } = inst.op {
        return Some(DeqNeed::Pred);
    }
    super::affine::deq_use(inst).map(|(data, _, _)| DeqNeed::Addr { data })
}

/// One SM's DAC state.
pub(crate) struct SmDac {
    pub engine: DacSm,
    pub locks: LockTable,
    pub prefetch: PrefetchTracker,
    requests: Vec<EarlyRequest>,
    /// Early requests in flight: (arrival cycle, line).
    arrivals: Vec<(u64, u64)>,
    /// The affine warp contexts (`affine_contexts`, 1 in the paper), each running
    /// its stream for one batch.
    affine: Vec<AffineWarp>,
    /// Batches started so far, for the contexts' issue order (oldest first).
    started: u64,
    /// Cycles an affine warp waited on its scoreboard.
    pub scoreboard_wait: u64,
    /// Every context is busy with a batch (its affine warp runs its stream, or the
    /// engine still expands its entries): blocks that arrive meanwhile wait for a
    /// context to free. With one context, a batch at a time.
    pub running: bool,
    /// Per block slot: the engine's id of the CTA a batch served there
    /// ([`DacSm::cta_id`]).
    batch_index: Vec<Option<usize>>,
    /// Per block slot: the linear index of the block a batch served there.
    served: Vec<Option<u64>>,
    /// Per block slot: barriers the resident block passed before a batch served it
    /// (its linear index and count), credited to its CTA when the batch starts.
    early_barriers: Vec<Option<(u64, u32)>>,
    /// Batches started (runs of the affine warp).
    pub batches: u64,
    /// Early requests not issued because their line could not be locked.
    pub dropped: u64,
    /// The AEU's request buffer: early requests of the last record, not yet sent.
    outbox: VecDeque<EarlyRequest>,
    /// Cycles the buffer's oldest request waited for a free L1 miss register.
    pub mshr_wait_cycles: u64,
    /// The cycles the L1 miss registers early requests took free again (one per
    /// early miss in flight), and how many they may hold at once (`None`:
    /// unlimited registers): `l1_mshrs - early_mshr_reserve`, at least one.
    early_misses: Vec<u64>,
    early_mshr_limit: Option<usize>,
    pub affine_insts: u64,
    /// The affine warps' instructions as energy-model events.
    pub affine_events: Events,
    /// Cycles the affine warp could not issue an `enq` (back-pressure).
    pub enq_stall_cycles: u64,
    line_size: u32,
    warp_size: u32,
    /// What an early request whose line cannot be locked does.
    unlockable: EarlyUnlockable,
    /// `batch_min_share` (see [`SmDac::may_start_batch`]).
    batch_min_share: u32,
}

/// One affine warp context: where it is in the stream, the cycle it may issue
/// next and its scoreboard (the cycle each register's pending write completes).
#[derive(Clone, Debug, Default)]
struct AffineWarp {
    streaming: bool,
    pc: usize,
    ready_at: u64,
    reg_ready: HashMap<u32, u64>,
    /// When its batch started (the order of [`SmDac::started`]).
    order: u64,
}

/// What the DAC hardware of all SMs counted.
#[derive(Clone, Debug, Default)]
pub(crate) struct DacTotals {
    pub engine: DacStats,
    pub prefetch: PrefetchStats,
    pub atq: QueueStats,
    pub pwaq: QueueStats,
    pub pwpq: QueueStats,
    pub affine_insts: u64,
    pub affine_events: Events,
    /// Threads per warp (for the PEU's slow-path compares).
    pub warp_size: u32,
    pub enq_stall_cycles: u64,
    pub locks_refused: u64,
    pub batches: u64,
    pub dropped: u64,
    pub mshr_wait_cycles: u64,
}

impl SmDac {
    pub fn new(cfg: &GpuConfig, warp_slots: usize, block_slots: usize) -> Result<SmDac, String> {
        let dc = DacConfig::from_gpu(cfg);
        Ok(SmDac {
            engine: DacSm::new(dc, warp_slots).map_err(|e| e.to_string())?,
            locks: dc.l1_locks(cfg).map_err(|e| format!("{e:?}"))?,
            prefetch: PrefetchTracker::new(),
            requests: Vec::new(),
            arrivals: Vec::new(),
            affine: vec![AffineWarp::default(); dc.affine_contexts as usize],
            started: 0,
            scoreboard_wait: 0,
            running: false,
            batch_index: vec![None; block_slots],
            served: vec![None; block_slots],
            early_barriers: vec![None; block_slots],
            batches: 0,
            dropped: 0,
            outbox: VecDeque::new(),
            mshr_wait_cycles: 0,
            early_misses: Vec::new(),
            early_mshr_limit: early_mshr_limit(cfg),
            affine_insts: 0,
            affine_events: Events::default(),
            enq_stall_cycles: 0,
            line_size: cfg.line_size,
            warp_size: cfg.warp_size,
            unlockable: cfg.early_unlockable,
            batch_min_share: cfg.batch_min_share,
        })
    }

    /// Whether an affine warp context is free for a new batch: its affine warp ran
    /// its whole stream and every entry was expanded for every warp of its batch.
    /// (With one context: the current batch is over.)
    pub fn batch_over(&mut self, plan: &Plan) -> bool {
        self.note_streams_done(plan);
        self.free_context().is_some()
    }

    /// Contexts whose affine warp has run the whole stream stop streaming.
    fn note_streams_done(&mut self, plan: &Plan) {
        for w in self.affine.iter_mut() {
            if w.pc >= plan.steps.len() {
                w.streaming = false;
            }
        }
    }

    /// Whether some affine warp context still serves a batch.
    fn any_context_busy(&self) -> bool {
        (0..self.affine.len()).any(|c| self.affine[c].streaming || !self.engine.is_drained_in(c))
    }

    /// Whether a free context should start a batch now for `unserved` of the SM's
    /// `resident` blocks, `more` telling whether the grid still has blocks to send.
    /// At once when no other context is busy (the SM would otherwise wait on no
    /// one) or no more blocks will come; otherwise only once the unserved blocks
    /// are at least 1/`batch_min_share` of the resident ones (`batch_min_share`
    /// 0: at once). A batch holds its context until its last block has consumed
    /// its last entry, about a block's lifetime: started for the first block to
    /// arrive, it would leave the blocks arriving just behind it waiting that long
    /// for a context (nw, where the blocks of a batch finish together and are
    /// replaced one by one). A busy context guarantees progress: it frees when its
    /// blocks finish, which does not depend on the waiting ones.
    pub fn may_start_batch(&self, unserved: usize, resident: usize, more: bool) -> bool {
        if unserved == 0 {
            return false;
        }
        let share = self.batch_min_share as usize;
        share == 0 || !more || !self.any_context_busy() || unserved * share >= resident
    }

    /// A context neither streaming nor with entries left to expand.
    fn free_context(&self) -> Option<usize> {
        (0..self.affine.len()).find(|&c| !self.affine[c].streaming && self.engine.is_drained_in(c))
    }

    /// Whether the block with linear index `linear` in block slot `slot` has been
    /// served by a batch.
    pub fn is_served(&self, slot: usize, linear: u64) -> bool {
        self.served.get(slot).copied().flatten() == Some(linear)
    }

    /// The block `linear` in block slot `slot` passed a barrier with its non-affine
    /// warps: its CTA's entries behind the affine warp's next barrier may be
    /// expanded (§4.2). A block no batch has served yet keeps the count for its
    /// batch.
    pub fn block_passed_barrier(&mut self, slot: usize, linear: u64) {
        if self.is_served(slot, linear) {
            if let Some(&Some(id)) = self.batch_index.get(slot) {
                self.engine.cta_passed_barrier(id);
            }
        } else if let Some(e) = self.early_barriers.get_mut(slot) {
            *e = match *e {
                Some((l, n)) if l == linear => Some((l, n + 1)),
                _ => Some((linear, 1)),
            };
        }
    }

    /// Starts a batch of resident blocks not served yet, `(block slot, ctaid,
    /// linear block index)` with warps from `slot * warps_per_block`, in a free
    /// affine warp context (see [`SmDac::batch_over`]).
    pub fn start_batch(
        &mut self,
        blocks: &[(usize, [u32; 3], u64)],
        block_dim: [u32; 3],
        warps_per_block: usize,
    ) -> Result<(), String> {
        let c = self
            .free_context()
            .ok_or("DAC: no free affine warp context for a new batch")?;
        let slots: Vec<CtaSlot> = blocks
            .iter()
            .map(|&(s, ctaid, _)| CtaSlot {
                ctaid,
                block_dim,
                first_warp_slot: s * warps_per_block,
            })
            .collect();
        self.engine
            .start_batch_in(c, &slots)
            .map_err(|e| e.to_string())?;
        for (i, &(s, _, linear)) in blocks.iter().enumerate() {
            let id = self.engine.cta_id(c, i);
            if let Some(b) = self.batch_index.get_mut(s) {
                *b = Some(id);
            }
            if let Some(b) = self.served.get_mut(s) {
                *b = Some(linear);
            }
            // Barriers passed before the batch started count for its CTA.
            if let Some(Some((l, n))) = self.early_barriers.get_mut(s).map(Option::take) {
                for _ in 0..n * u32::from(l == linear) {
                    self.engine.cta_passed_barrier(id);
                }
            }
        }
        self.started += 1;
        self.affine[c] = AffineWarp {
            streaming: true,
            order: self.started,
            ..AffineWarp::default()
        };
        self.running = self.free_context().is_none();
        self.batches += 1;
        Ok(())
    }

    /// One cycle of the expansion units, the AEU's early requests and their
    /// arrivals. A finished `enq.data` record leaves the AEU only when the previous
    /// record's requests have all gone to the L1 ([`DacSm::cycle_admit`]); its
    /// requests wait in the AEU's request buffer and go out one per cycle
    /// ([`SmDac::issue_early`]).
    pub fn tick(&mut self, now: u64, memsys: &mut MemorySystem, sm_id: usize) {
        self.requests.clear();
        let room = self.outbox.is_empty();
        self.engine
            .cycle_admit(now, &mut self.requests, &mut |_| room);
        self.outbox.extend(self.requests.drain(..));
        self.issue_early(now, memsys, sm_id);
        let mut i = 0;
        while i < self.arrivals.len() {
            let (at, line) = self.arrivals[i];
            if at > now {
                i += 1;
                continue;
            }
            self.arrivals.swap_remove(i);
            self.prefetch.arrive(line, at);
        }
    }

    /// The AEU's port into the L1: the oldest buffered early request, at most one
    /// a cycle. A request whose line cannot be locked (its set has N−1 ways
    /// locked, or the line's counter is saturated) never waits for locks to be
    /// released. With `early_unlockable = "drop"` it is dropped at once, before it
    /// waits for or takes a miss register: the line is neither fetched nor locked,
    /// and the warp's `deq.data` loads it itself once the record's other lines
    /// have arrived, a second memory round trip. With `"unlocked"` it goes on
    /// without a lock (counted in `prefetch_unprotected`): its fill takes the set's
    /// unlocked way and may be replaced before its use, but it overlaps the
    /// record's other lines. A request whose line is absent waits for a free miss register
    /// that leaves the reserve for demand misses ([`SmDac::early_mshr_free`]), so
    /// it never queues ahead of the warps' own misses nor starves them.
    pub fn issue_early(&mut self, now: u64, memsys: &mut MemorySystem, sm_id: usize) {
        let Some(r) = self.outbox.front().copied() else {
            return;
        };
        if !lockable(&self.locks, memsys, sm_id, self.line_size, r.line)
            && self.unlockable == EarlyUnlockable::Drop
        {
            self.outbox.pop_front();
            self.dropped += 1;
            return;
        }
        let present = memsys.l1_locate(sm_id, r.line).is_some();
        if !present && !self.early_mshr_free(now, memsys, sm_id) {
            self.mshr_wait_cycles += 1;
            return;
        }
        self.outbox.pop_front();
        let o = memsys.access(sm_id, r.line, self.line_size, AccessKind::Read, now);
        if !present {
            self.early_misses.push(o.ready.max(now + 1));
        }
        let lock = memsys.l1_locate(sm_id, r.line).and_then(|(set, way)| {
            self.locks.lock(set, way).ok()?;
            memsys.l1_set_pinned(sm_id, set, way, true);
            Some((set, way))
        });
        self.prefetch.issue(&r, lock);
        self.arrivals.push((o.ready.max(now), r.line));
    }

    /// Whether an early miss may take an L1 miss register at `now`: one is free,
    /// and early misses in flight hold fewer than their share (the registers
    /// beyond `early_mshr_reserve`), so a demand miss always finds the reserve
    /// not held by prefetches.
    pub fn early_mshr_free(&mut self, now: u64, memsys: &MemorySystem, sm_id: usize) -> bool {
        self.early_misses.retain(|&free_at| free_at > now);
        let under_share = self
            .early_mshr_limit
            .is_none_or(|limit| self.early_misses.len() < limit);
        under_share && memsys.l1_mshr_available(sm_id, now)
    }

    /// Issues the next step of one affine warp context at `now` (at most one a
    /// cycle: they share the first scheduler's issue slot), the oldest batch's
    /// first: `Some(true)` issued, `Some(false)` blocked by back-pressure, `None`
    /// nothing to issue (done, or waiting on the scoreboard: the step uses a
    /// register an earlier step writes less than `latency` cycles before, as any
    /// warp's scoreboard would hold it).
    pub fn issue_affine(&mut self, plan: &Plan, now: u64, latency: u64) -> Option<bool> {
        self.note_streams_done(plan);
        let mut order: Vec<usize> = (0..self.affine.len())
            .filter(|&c| self.affine[c].streaming && self.affine[c].ready_at <= now)
            .collect();
        order.sort_by_key(|&c| self.affine[c].order);
        let mut blocked = None;
        for c in order {
            match self.try_issue_affine(c, plan, now, latency) {
                Some(true) => return Some(true),
                Some(false) => blocked = Some(false),
                None => {}
            }
        }
        blocked
    }

    /// [`SmDac::issue_affine`] for context `c`.
    fn try_issue_affine(&mut self, c: usize, plan: &Plan, now: u64, latency: u64) -> Option<bool> {
        let w = &self.affine[c];
        let step = *plan.steps.get(w.pc)?;
        let regs = plan.regs.get(w.pc);
        let pending = |k: &u32| w.reg_ready.get(k).is_some_and(|&r| r > now);
        if regs.is_some_and(|r| r.used.iter().any(pending)) {
            self.scoreboard_wait += 1;
            return None;
        }
        match step {
            AffStep::Plain => {}
            AffStep::Barrier => self.engine.affine_barrier_in(c),
            AffStep::Enq(e) => {
                if !self.engine.can_enqueue_in(c) {
                    self.enq_stall_cycles += 1;
                    return Some(false);
                }
                if self.engine.enqueue_in(c, plan.enqs[e as usize]).is_err() {
                    self.enq_stall_cycles += 1;
                    return Some(false);
                }
            }
        }
        let w = &mut self.affine[c];
        for &k in regs.map_or(&[][..], |r| &r.written[..]) {
            w.reg_ready.insert(k, now + latency.max(1));
        }
        w.pc += 1;
        w.ready_at = now + 1;
        w.streaming = w.pc < plan.steps.len();
        self.affine_insts += 1;
        if let Some(e) = plan.energy.get(w.pc - 1) {
            // On the SIMT lanes (paper §4.1), two of them computing base and offset.
            let lanes = Lanes::Vector {
                active: 2,
                warp: self.warp_size,
            };
            self.affine_events.issue(e, lanes);
        }
        Some(true)
    }

    /// True when every affine warp context has run its whole stream.
    #[cfg(test)]
    pub fn affine_done(&self, plan: &Plan) -> bool {
        self.affine
            .iter()
            .all(|w| !w.streaming || w.pc >= plan.steps.len())
    }

    /// Whether warp slot `ws` must wait before issuing `need`.
    pub fn deq_blocked(&self, need: DeqNeed, ws: usize) -> bool {
        match need {
            DeqNeed::Pred => self.engine.peek_pred(ws).is_none(),
            DeqNeed::Addr { data } => match self.engine.peek_addr(ws) {
                None => true,
                Some(e) => {
                    data && e.data
                        && (!self.prefetch.is_ready(ws, e.seq)
                            || self
                                .outbox
                                .iter()
                                .any(|r| r.warp_slot == ws && r.seq == e.seq))
                }
            },
        }
    }

    /// Warp slot `ws` issues `need` at `now`: pops its entry (and releases the
    /// locks of a `deq.data`'s lines; a way whose last lock goes is replaceable
    /// again in L1 number `sm_id`).
    pub fn deq(
        &mut self,
        need: DeqNeed,
        ws: usize,
        now: u64,
        memsys: &mut MemorySystem,
        sm_id: usize,
    ) {
        match need {
            DeqNeed::Pred => {
                self.engine.deq_pred(ws);
            }
            DeqNeed::Addr { .. } => {
                if let Some(e) = self.engine.deq_addr(ws) {
                    if e.data {
                        let mut freed = Vec::new();
                        self.prefetch
                            .consume(ws, e.seq, now, &mut self.locks, &mut freed);
                        for (set, way) in freed {
                            memsys.l1_set_pinned(sm_id, set, way, false);
                        }
                    }
                }
            }
        }
    }

    /// Something happens next cycle (expansion, arrivals, the affine warp, or the
    /// end of a batch, after which the next one may start).
    pub fn busy(&self, _plan: &Plan) -> bool {
        self.affine.iter().any(|w| w.streaming)
            || !self.engine.is_drained()
            || !self.arrivals.is_empty()
            || !self.outbox.is_empty()
    }

    pub fn add_to(&self, t: &mut DacTotals) {
        let e = self.engine.stats();
        let te = &mut t.engine;
        te.cycles += e.cycles;
        te.aeu_busy += e.aeu_busy;
        te.peu_busy += e.peu_busy;
        te.idle += e.idle;
        te.stall_queue_full += e.stall_queue_full;
        te.stall_barrier += e.stall_barrier;
        te.addr_records += e.addr_records;
        te.pred_masks += e.pred_masks;
        te.lines += e.lines;
        te.early_requests += e.early_requests;
        te.aeu_errors += e.aeu_errors;
        te.peu_uniform += e.peu_uniform;
        te.peu_fast += e.peu_fast;
        te.peu_slow += e.peu_slow;
        te.enq_refused += e.enq_refused;
        te.stall_l1 += e.stall_l1;
        let p = self.prefetch.stats();
        let tp = &mut t.prefetch;
        tp.requests += p.requests;
        tp.arrivals += p.arrivals;
        tp.unprotected += p.unprotected;
        tp.records += p.records;
        tp.lines += p.lines;
        tp.lead_sum += p.lead_sum;
        tp.lead_max = tp.lead_max.max(p.lead_max);
        for (a, b) in tp.lead_histogram.iter_mut().zip(p.lead_histogram) {
            *a += b;
        }
        tp.wait_cycles += p.wait_cycles;
        add_queue(&mut t.atq, &self.engine.atq_stats());
        add_queue(&mut t.pwaq, &self.engine.pwaq_stats());
        add_queue(&mut t.pwpq, &self.engine.pwpq_stats());
        t.affine_insts += self.affine_insts;
        t.affine_events.add_issued(&self.affine_events);
        t.warp_size = self.warp_size;
        t.enq_stall_cycles += self.enq_stall_cycles;
        t.locks_refused += p.unprotected;
        t.batches += self.batches;
        t.dropped += self.dropped;
        t.mshr_wait_cycles += self.mshr_wait_cycles;
    }
}

fn add_queue(a: &mut QueueStats, b: &QueueStats) {
    a.pushes += b.pushes;
    a.pops += b.pops;
    a.full_refusals += b.full_refusals;
    a.empty_pops += b.empty_pops;
    a.samples += b.samples;
    a.occupancy_sum += b.occupancy_sum;
    a.full_samples += b.full_samples;
    a.empty_samples += b.empty_samples;
    a.max_occupancy = a.max_occupancy.max(b.max_occupancy);
}

/// How many L1 miss registers early requests may hold at once on machine `cfg`
/// (`None` with unlimited registers): all but `early_mshr_reserve`, at least one.
fn early_mshr_limit(cfg: &GpuConfig) -> Option<usize> {
    (cfg.l1_mshrs > 0).then(|| cfg.l1_mshrs.saturating_sub(cfg.early_mshr_reserve).max(1) as usize)
}

/// Whether L1 number `l1` can lock the line of `addr` now: a locked line below the
/// counter's maximum, or any other line when its set has a way to spare (at most
/// N−1 of N ways locked).
pub(crate) fn lockable(
    locks: &LockTable,
    mem: &MemorySystem,
    l1: usize,
    line_size: u32,
    addr: u64,
) -> bool {
    match mem.l1_locate(l1, addr) {
        Some((set, way)) => locks.can_lock(set, way).is_ok(),
        None => {
            let set = locks.set_of(addr, line_size);
            locks.locked_ways(set) + 1 < locks.ways()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::dac::AffineTuple;

    /// The GTX 480 with `mshrs` L1 miss registers, none reserved for demand
    /// misses: 32 sets x 4 ways of 128 bytes.
    fn machine(mshrs: u32) -> (GpuConfig, MemorySystem) {
        reserving(mshrs, 0)
    }

    /// The GTX 480 with `mshrs` L1 miss registers, `reserve` of them kept for
    /// demand misses.
    fn reserving(mshrs: u32, reserve: u32) -> (GpuConfig, MemorySystem) {
        let mut cfg = GpuConfig::gtx480();
        cfg.l1_mshrs = mshrs;
        cfg.early_mshr_reserve = reserve;
        let m = MemorySystem::new(super::super::timing::mem_config(&cfg)).unwrap();
        (cfg, m)
    }

    /// One CTA of `warps` warps; `enq.data` of a stride-4 tuple at `base` (one line
    /// per warp, consecutive lines).
    fn batch(cfg: &GpuConfig, warps: u32, base: i64) -> SmDac {
        strided_batch(cfg, warps, base, 4)
    }

    /// [`batch`] with a thread-x stride of `stride` bytes.
    fn strided_batch(cfg: &GpuConfig, warps: u32, base: i64, stride: i64) -> SmDac {
        let mut d = SmDac::new(cfg, 48, 8).unwrap();
        d.start_batch(&[(0, [0, 0, 0], 0)], [32 * warps, 1, 1], warps as usize)
            .unwrap();
        let t = AddrTuple {
            tuple: AffineTuple {
                base,
                strides: [stride, 0, 0],
                cta_strides: [0, 0, 0],
            },
            access_bytes: 4,
            wide: true,
        };
        d.engine.enqueue(Enq::Data(t)).unwrap();
        d
    }

    #[test]
    fn locked_lines_stay_until_used_and_a_full_set_drops_the_request() {
        let (mut cfg, mut m) = machine(0);
        cfg.early_unlockable = EarlyUnlockable::Drop;
        // Stride 128: lane l of warp w fetches line 32w + l, in set l; each set
        // gets one line of each of the 4 warps (set 0: 0x0, 0x1000, 0x2000, 0x3000).
        let mut d = strided_batch(&cfg, 4, 0, 128);
        for now in 0..2000 {
            d.tick(now, &mut m, 0);
        }
        assert_eq!(d.engine.stats().early_requests, 4 * 32);
        let s = d.prefetch.stats();
        // 128 lines of 32 sets: 3 per set locked, the 4th of each set dropped.
        assert_eq!((s.requests, d.dropped), (96, 32));
        assert_eq!(d.locks.stats().max_locked_ways, 3);
        // Demand misses to set 0 replace its unlocked way, never a locked line.
        for k in 10..20u64 {
            m.access(0, k * 0x1000, 4, AccessKind::Read, 2000 + k);
        }
        assert!(
            m.l1_locate(0, 0x3000).is_none(),
            "the dropped line was not fetched"
        );
        for line in [0x0u64, 0x1000, 0x2000] {
            let (set, way) = m.l1_locate(0, line).expect("locked line present");
            assert!(d.locks.is_locked(set, way));
        }
        // Warp 0 uses its record: its locks go, and the ways are replaceable again.
        assert!(!d.deq_blocked(DeqNeed::Addr { data: true }, 0));
        d.deq(DeqNeed::Addr { data: true }, 0, 2100, &mut m, 0);
        assert_eq!(d.locks.locked_ways(0), 2);
        assert_eq!(d.prefetch.stats().unprotected, 0);
    }

    #[test]
    fn early_requests_wait_for_a_free_miss_register() {
        let (cfg, mut m) = machine(2);
        let mut d = batch(&cfg, 4, 0x10_0000);
        let mut issued = Vec::new();
        for now in 0..30 {
            d.tick(now, &mut m, 0);
            issued.push(d.prefetch.stats().requests);
        }
        // Two misses take both registers; the third waits for a fill.
        assert_eq!(
            issued[29], 2,
            "two registers, fills take hundreds of cycles"
        );
        assert!(d.mshr_wait_cycles > 0);
        // The waiting record is not ready, so its warp does not load it itself.
        assert!(d.deq_blocked(DeqNeed::Addr { data: true }, 2));
        let mut now = 30;
        while d.prefetch.stats().requests < 4 {
            d.tick(now, &mut m, 0);
            now += 1;
            assert!(now < 5000, "the requests go out once registers free");
        }
        assert!(now > 200);
    }

    #[test]
    fn demand_misses_find_the_reserved_miss_registers_free() {
        let (cfg, mut m) = reserving(4, 2);
        // 8 warps, one line each: 8 early misses want registers.
        let mut d = batch(&cfg, 8, 0x10_0000);
        for now in 0..60 {
            d.tick(now, &mut m, 0);
        }
        assert_eq!(
            d.prefetch.stats().requests,
            2,
            "early misses hold at most 4 - 2 registers"
        );
        assert!(d.mshr_wait_cycles > 0);
        assert!(d.deq_blocked(DeqNeed::Addr { data: true }, 5));
        // Two demand misses now start at once: no wait for a register.
        for k in 0..2u64 {
            m.access(0, 0x80_0000 + 128 * k, 4, AccessKind::Read, 60);
        }
        assert_eq!(m.l1_mshr_wait_cycles(0), 0);
        // A third demand miss finds every register busy (the reserve is not a cap
        // on demand misses, only on early ones).
        m.access(0, 0x90_0000, 4, AccessKind::Read, 60);
        assert!(m.l1_mshr_wait_cycles(0) > 0);
    }

    #[test]
    fn a_request_that_cannot_be_locked_is_dropped_without_a_miss_register() {
        let (mut cfg, mut m) = machine(1);
        cfg.early_unlockable = EarlyUnlockable::Drop;
        // The only register is busy with a demand miss for hundreds of cycles.
        m.access(0, 0x50_0000, 4, AccessKind::Read, 0);
        assert!(!m.l1_mshr_available(0, 1));
        let mut d = batch(&cfg, 1, 0x10_0000);
        let set = d.locks.set_of(0x10_0000, 128);
        for way in 0..3 {
            d.locks.lock(set, way).unwrap();
        }
        for now in 1..10 {
            d.tick(now, &mut m, 0);
        }
        assert_eq!((d.dropped, d.mshr_wait_cycles), (1, 0));
        assert_eq!(d.prefetch.stats().requests, 0);
        assert!(
            !d.deq_blocked(DeqNeed::Addr { data: true }, 0),
            "the warp loads the line itself"
        );
    }

    #[test]
    fn an_unlockable_request_is_fetched_unlocked_when_configured() {
        let (mut cfg, mut m) = machine(0);
        cfg.early_unlockable = EarlyUnlockable::Unlocked;
        // As in the dropping test: 4 warps, one line of each in every set; the 4th
        // line of a set (warp 3's) finds 3 ways locked.
        let mut d = strided_batch(&cfg, 4, 0, 128);
        for now in 0..2000 {
            d.tick(now, &mut m, 0);
        }
        let s = *d.prefetch.stats();
        assert_eq!((s.requests, s.unprotected, d.dropped), (128, 32, 0));
        assert_eq!(d.locks.stats().max_locked_ways, 3, "never the last way");
        // Warp 3's lines were fetched, unlocked: its record is ready, and using it
        // releases nothing.
        let (set, way) = m
            .l1_locate(0, 0x3000)
            .expect("the unlocked line was fetched");
        assert!(!d.locks.is_locked(set, way));
        assert!(!d.deq_blocked(DeqNeed::Addr { data: true }, 3));
        d.deq(DeqNeed::Addr { data: true }, 3, 2000, &mut m, 0);
        assert_eq!(d.locks.locked_ways(0), 3);
        // Warp 0's locked lines go as before.
        d.deq(DeqNeed::Addr { data: true }, 0, 2001, &mut m, 0);
        assert_eq!(d.locks.locked_ways(0), 2);
    }

    #[test]
    fn a_batch_waits_for_a_share_of_the_resident_blocks_while_a_context_is_busy() {
        let (mut cfg, _) = machine(0);
        cfg.affine_contexts = 2;
        cfg.batch_min_share = 2;
        let mut d = SmDac::new(&cfg, 8, 8).unwrap();
        let plan = data_stream(4);
        assert!(!d.may_start_batch(0, 8, true), "nothing to serve");
        assert!(d.may_start_batch(1, 8, true), "no context busy: at once");
        d.start_batch(&[(0, [0, 0, 0], 0)], [32, 1, 1], 1).unwrap();
        assert!(d.batch_over(&plan), "the other context is free");
        // Context 0 serves block 0: one or three unserved of 8 resident wait...
        assert!(!d.may_start_batch(1, 8, true));
        assert!(!d.may_start_batch(3, 8, true));
        // ...half of them start, and so does any number once no block is to come.
        assert!(d.may_start_batch(4, 8, true));
        assert!(d.may_start_batch(1, 8, false));
        // batch_min_share = 0: the first unserved block starts a batch.
        cfg.batch_min_share = 0;
        let mut d0 = SmDac::new(&cfg, 8, 8).unwrap();
        d0.start_batch(&[(0, [0, 0, 0], 0)], [32, 1, 1], 1).unwrap();
        assert!(d0.may_start_batch(1, 8, true));
    }

    #[test]
    fn the_affine_warp_waits_only_for_the_registers_it_uses() {
        let (cfg, _) = machine(0);
        let mut d = SmDac::new(&cfg, 48, 8).unwrap();
        d.start_batch(&[(0, [0, 0, 0], 0)], [32, 1, 1], 1).unwrap();
        let regs = |used: &[u32], written: &[u32]| StepRegs {
            used: used.to_vec(),
            written: written.to_vec(),
        };
        // r1 = ...; r3 = f(r2) (independent); r4 = g(r1) (dependent).
        let plan = Plan {
            steps: vec![AffStep::Plain; 3],
            enqs: vec![],
            regs: vec![regs(&[1], &[1]), regs(&[2, 3], &[3]), regs(&[1, 4], &[4])],
            energy: vec![],
        };
        let issued: Vec<Option<bool>> = (0..6).map(|t| d.issue_affine(&plan, t, 4)).collect();
        assert_eq!(
            issued,
            [Some(true), Some(true), None, None, Some(true), None],
            "the dependent step waits for r1 (written at 0, ready at 4)"
        );
        assert_eq!((d.scoreboard_wait, d.affine_insts), (2, 3));
        assert!(d.affine_done(&plan));
    }

    #[test]
    fn a_batch_starts_only_for_blocks_not_served_yet() {
        let (cfg, _) = machine(0);
        let mut d = SmDac::new(&cfg, 48, 8).unwrap();
        d.start_batch(&[(0, [0, 0, 0], 7), (1, [1, 0, 0], 8)], [32, 1, 1], 1)
            .unwrap();
        assert!(d.is_served(0, 7) && d.is_served(1, 8));
        assert!(!d.is_served(0, 9), "another block in the same slot");
        assert!(!d.is_served(2, 7));
        let plan = Plan::default();
        assert!(d.batch_over(&plan), "an empty stream is over at once");
        assert!(!d.busy(&plan), "nothing left to expand");
        assert_eq!(d.batches, 1);
    }

    /// An affine stream of `n` `enq.data` of a stride-4 tuple (one line a warp).
    fn data_stream(n: usize) -> Plan {
        let t = AddrTuple {
            tuple: AffineTuple {
                base: 0x10_0000,
                strides: [4, 0, 0],
                cta_strides: [128, 0, 0],
            },
            access_bytes: 4,
            wide: true,
        };
        Plan {
            steps: vec![AffStep::Enq(0); n],
            enqs: vec![Enq::Data(t)],
            regs: vec![StepRegs::default(); n],
            energy: vec![],
        }
    }

    /// Runs the DAC side of an SM from cycle `from` to `to` (the affine warps issue
    /// every cycle, nobody consumes).
    fn run(d: &mut SmDac, m: &mut MemorySystem, plan: &Plan, from: u64, to: u64) {
        for now in from..to {
            d.issue_affine(plan, now, 1);
            d.tick(now, m, 0);
        }
    }

    #[test]
    fn a_second_batch_starts_before_the_first_drains() {
        let (mut cfg, mut m) = machine(0);
        cfg.affine_contexts = 2;
        let mut d = SmDac::new(&cfg, 8, 8).unwrap();
        // 12 entries: warp 0's PWAQ (4) and the ATQ (8) hold them all, so its
        // affine warp finishes its stream while no entry has been consumed.
        let plan = data_stream(12);
        d.start_batch(&[(0, [0, 0, 0], 0)], [32, 1, 1], 1).unwrap();
        assert!(!d.running, "a second context is free");
        run(&mut d, &mut m, &plan, 0, 200);
        assert!(d.affine[0].pc == 12 && !d.engine.is_drained_in(0));
        assert_eq!(d.engine.pwaq_stats().pushes, 4);
        // Block 1 joins: its batch starts in the other context and its warp gets
        // its records while block 0's entries still wait.
        assert!(d.batch_over(&plan));
        d.start_batch(&[(1, [1, 0, 0], 1)], [32, 1, 1], 1).unwrap();
        assert!(d.running, "both contexts busy");
        run(&mut d, &mut m, &plan, 200, 400);
        let e = d.engine.peek_addr(1).expect("block 1's first record");
        assert_eq!(e.record.as_ref().unwrap().lines[0].line, 0x10_0080);
        assert!(!d.engine.is_drained_in(0));
        assert!(!d.batch_over(&plan), "neither context is free");
        // Warp 0 consumes its records: context 0 drains and frees.
        for now in 400..700 {
            if !d.deq_blocked(DeqNeed::Addr { data: true }, 0) {
                d.deq(DeqNeed::Addr { data: true }, 0, now, &mut m, 0);
            }
            run(&mut d, &mut m, &plan, now, now + 1);
        }
        assert!(d.engine.is_drained_in(0));
        assert!(d.batch_over(&plan));
        assert_eq!(d.batches, 2);
    }

    #[test]
    fn with_one_context_a_batch_waits_for_the_previous_to_drain() {
        let (mut cfg, mut m) = machine(0);
        cfg.affine_contexts = 1; // the paper's single affine warp
        let mut d = SmDac::new(&cfg, 8, 8).unwrap();
        let plan = data_stream(12);
        d.start_batch(&[(0, [0, 0, 0], 0)], [32, 1, 1], 1).unwrap();
        assert!(d.running);
        run(&mut d, &mut m, &plan, 0, 200);
        assert!(d.affine_done(&plan));
        assert!(!d.batch_over(&plan), "the stream is done but not expanded");
        assert!(d.start_batch(&[(1, [1, 0, 0], 1)], [32, 1, 1], 1).is_err());
    }

    #[test]
    fn barriers_a_block_passed_before_its_batch_count_for_it() {
        let (cfg, mut m) = machine(0);
        let mut d = SmDac::new(&cfg, 8, 8).unwrap();
        // The stream: a barrier, then one enq.data.
        let mut plan = data_stream(2);
        plan.steps[0] = AffStep::Barrier;
        // Blocks 5 and 6 pass their barrier before any batch serves them (block 4,
        // earlier in slot 1, passed one too: its count is not block 6's).
        d.block_passed_barrier(0, 5);
        d.block_passed_barrier(1, 4);
        d.block_passed_barrier(1, 6);
        d.start_batch(&[(0, [0, 0, 0], 5), (1, [1, 0, 0], 6)], [32, 1, 1], 1)
            .unwrap();
        run(&mut d, &mut m, &plan, 0, 100);
        assert!(
            d.engine.peek_addr(0).is_some(),
            "block 5 is past the barrier"
        );
        assert!(d.engine.peek_addr(1).is_some(), "block 6 passed one too");
        // A served block's barrier goes to its CTA.
        let mut d = SmDac::new(&cfg, 8, 8).unwrap();
        d.start_batch(&[(0, [0, 0, 0], 5)], [32, 1, 1], 1).unwrap();
        run(&mut d, &mut m, &plan, 100, 200);
        assert!(d.engine.peek_addr(0).is_none(), "held at the barrier");
        d.block_passed_barrier(0, 5);
        run(&mut d, &mut m, &plan, 200, 300);
        assert!(d.engine.peek_addr(0).is_some());
    }
}
