//! The DAC side of the timing model (paper §4.1-§4.4): per SM, the affine warp, the
//! expansion engine ([`DacSm`]: ATQ, AEU/PEU, per-warp queues), the early requests of
//! `enq.data` into the SM's L1 with their lock counters ([`LockTable`]) and their
//! follow-up to the `deq.data` that uses them ([`PrefetchTracker`]).
//!
//! What the affine warp computes is known before the run (functional semantics,
//! [`super::affine`]): the timing model replays the launch's affine instruction
//! sequence ([`Plan`]) once per batch of blocks resident on the SM. Blocks are
//! dispatched to a DAC SM in batches: when the SM is empty, it is filled, the batch
//! starts ([`DacSm::start_batch`]) and no block joins until every block of the batch
//! has finished (the paper runs the affine warp once per batch of concurrent warps).
//!
//! The affine warp issues on the SM's first scheduler ahead of the non-affine warps
//! (it is their producer), at most one instruction per `alu_latency` cycles (it has no
//! scoreboard: each instruction is taken to depend on the previous one). An `enq`
//! issues only when [`DacSm::can_enqueue`] (back-pressure). A non-affine warp's `deq`
//! waits (stall reason `queue`) until its queue holds an entry and, for `deq.data`,
//! until every early request of the entry has arrived in L1.
//!
//! Not modelled: the L1 model of [`crate::mem`] does not consult the lock table in
//! its replacement, so locks are bookkeeping (counted, refused at N−1 ways, released
//! at use) and a locked line may still be evicted before its `deq.data` (which then
//! misses like any load).

use std::collections::HashMap;

use super::affine::{AffineEvent, AffineTrace};
use super::config::GpuConfig;
use super::dac::{
    AddrTuple, CmpOp, CtaSlot, DacConfig, DacSm, DacStats, EarlyRequest, Enq, IntType, LockTable,
    PredTuple, PrefetchStats, PrefetchTracker, QueueStats,
};
use super::isa::{Cmp, Inst, Kernel, Op, Type};
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

/// The affine warp's instruction sequence of a launch, with its `enq` tuples.
#[derive(Clone, Debug, Default)]
pub(crate) struct Plan {
    pub steps: Vec<AffStep>,
    pub enqs: Vec<Enq>,
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
            Op::EnqData { .. } | Op::EnqAddr { .. } | Op::EnqPred { .. } | Op::Bar { .. } => {
                match events.next() {
                    Some(AffineEvent::Barrier { .. }) => AffStep::Barrier,
                    Some(e) => match enq_of(e) {
                        Some(q) => {
                            p.enqs.push(q);
                            AffStep::Enq(p.enqs.len() as u32 - 1)
                        }
                        None => AffStep::Plain,
                    },
                    None => AffStep::Plain,
                }
            }
            _ => AffStep::Plain,
        };
        p.steps.push(step);
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
            ..
        } => {
            let t = AddrTuple {
                tuple: value.tuple,
                access_bytes: *bytes,
                wide: *wide,
            };
            Some(if *data { Enq::Data(t) } else { Enq::Addr(t) })
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
    /// The way each locked line was given.
    ways: HashMap<u64, u32>,
    /// The affine warp: next step, and the cycle it may issue.
    pub pc: usize,
    pub ready_at: u64,
    /// A batch is being served (no block may join).
    pub running: bool,
    /// Per block slot: its index in the batch.
    pub batch_index: Vec<Option<usize>>,
    pub affine_insts: u64,
    /// Cycles the affine warp could not issue an `enq` (back-pressure).
    pub enq_stall_cycles: u64,
    line_size: u32,
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
    pub enq_stall_cycles: u64,
    pub locks_refused: u64,
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
            ways: HashMap::new(),
            pc: 0,
            ready_at: 0,
            running: false,
            batch_index: vec![None; block_slots],
            affine_insts: 0,
            enq_stall_cycles: 0,
            line_size: cfg.line_size,
        })
    }

    /// Starts a batch of the resident blocks: `(block slot, ctaid)`, warps from
    /// `slot * warps_per_block`.
    pub fn start_batch(
        &mut self,
        blocks: &[(usize, [u32; 3])],
        block_dim: [u32; 3],
        warps_per_block: usize,
    ) -> Result<(), String> {
        let slots: Vec<CtaSlot> = blocks
            .iter()
            .map(|&(s, ctaid)| CtaSlot {
                ctaid,
                block_dim,
                first_warp_slot: s * warps_per_block,
            })
            .collect();
        self.engine.start_batch(&slots).map_err(|e| e.to_string())?;
        self.batch_index.iter_mut().for_each(|b| *b = None);
        for (i, &(s, _)) in blocks.iter().enumerate() {
            if let Some(b) = self.batch_index.get_mut(s) {
                *b = Some(i);
            }
        }
        (self.pc, self.running) = (0, true);
        Ok(())
    }

    /// One cycle of the expansion units and the early requests' arrivals.
    pub fn tick(&mut self, now: u64, memsys: &mut MemorySystem, sm_id: usize) {
        self.requests.clear();
        self.engine.cycle(now, &mut self.requests);
        for r in &self.requests {
            self.prefetch.issue(r);
            let o = memsys.access(sm_id, r.line, self.line_size, AccessKind::Read, now);
            self.arrivals.push((o.ready.max(now), r.line));
        }
        let mut i = 0;
        while i < self.arrivals.len() {
            let (at, line) = self.arrivals[i];
            if at > now {
                i += 1;
                continue;
            }
            self.arrivals.swap_remove(i);
            let set = self.locks.set_of(line, self.line_size);
            let ways = self.locks.ways();
            let way = match self.ways.get(&line) {
                Some(&w) if self.locks.is_locked(set, w) => w,
                _ => self.locks.victim(set, 0..ways).unwrap_or(0),
            };
            self.ways.insert(line, way);
            self.prefetch.arrive(line, at, set, way, &mut self.locks);
        }
    }

    /// The affine warp's next step when it may issue at `now`: `Some(true)` issued,
    /// `Some(false)` blocked by back-pressure, `None` nothing to issue.
    pub fn issue_affine(&mut self, plan: &Plan, now: u64, latency: u64) -> Option<bool> {
        if !self.running || self.ready_at > now {
            return None;
        }
        let step = *plan.steps.get(self.pc)?;
        match step {
            AffStep::Plain => {}
            AffStep::Barrier => self.engine.affine_barrier(),
            AffStep::Enq(e) => {
                if !self.engine.can_enqueue() {
                    self.enq_stall_cycles += 1;
                    return Some(false);
                }
                if self.engine.enqueue(plan.enqs[e as usize]).is_err() {
                    self.enq_stall_cycles += 1;
                    return Some(false);
                }
            }
        }
        self.pc += 1;
        self.ready_at = now + latency.max(1);
        self.affine_insts += 1;
        Some(true)
    }

    /// True when the affine warp has run its whole stream.
    pub fn affine_done(&self, plan: &Plan) -> bool {
        self.pc >= plan.steps.len()
    }

    /// Whether warp slot `ws` must wait before issuing `need`.
    pub fn deq_blocked(&self, need: DeqNeed, ws: usize) -> bool {
        match need {
            DeqNeed::Pred => self.engine.peek_pred(ws).is_none(),
            DeqNeed::Addr { data } => match self.engine.peek_addr(ws) {
                None => true,
                Some(e) => data && e.data && !self.prefetch.is_ready(ws, e.seq),
            },
        }
    }

    /// Warp slot `ws` issues `need` at `now`: pops its entry (and releases the
    /// locks of a `deq.data`'s lines).
    pub fn deq(&mut self, need: DeqNeed, ws: usize, now: u64) {
        match need {
            DeqNeed::Pred => {
                self.engine.deq_pred(ws);
            }
            DeqNeed::Addr { .. } => {
                if let Some(e) = self.engine.deq_addr(ws) {
                    if e.data {
                        self.prefetch.consume(ws, e.seq, now, &mut self.locks);
                    }
                }
            }
        }
    }

    /// Something happens next cycle (expansion, arrivals, the affine warp).
    pub fn busy(&self, plan: &Plan) -> bool {
        self.running && (!self.affine_done(plan) || !self.engine.is_drained())
            || !self.arrivals.is_empty()
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
        add_queue(&mut t.atq, self.engine.atq_stats());
        add_queue(&mut t.pwaq, &self.engine.pwaq_stats());
        add_queue(&mut t.pwpq, &self.engine.pwpq_stats());
        t.affine_insts += self.affine_insts;
        t.enq_stall_cycles += self.enq_stall_cycles;
        t.locks_refused += p.unprotected;
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
