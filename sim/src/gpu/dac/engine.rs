//! One SM's DAC expansion hardware, cycle by cycle (paper §4.1, Figure 9 ③-⑨):
//! the Affine Tuple Queue, the AEU and PEU working on its head entry, the per-warp
//! address and predicate queues, and the barrier gate of §4.2.
//!
//! The timing model drives it:
//! * at the scoreboard, the affine warp's `enq` may issue only when
//!   [`DacSm::can_enqueue`] (the ATQ has room and no per-warp predicate queue is
//!   full, §4.1 ⑨); it then calls [`DacSm::enqueue`];
//! * the affine warp's `bar.sync` calls [`DacSm::affine_barrier`]; when a CTA's
//!   non-affine warps are released from a barrier, [`DacSm::cta_passed_barrier`].
//!   Entries enqueued after the affine warp's k-th barrier are expanded for a CTA
//!   only once that CTA has passed its k-th barrier (§4.2: the AEU disables
//!   expansion, and so early requests, for blocks that have not passed it);
//! * every cycle, [`DacSm::cycle`] advances the expansion units by one cycle and
//!   appends the early memory requests of finished `enq.data` expansions;
//! * a non-affine `deq` may issue only when its queue is non-empty
//!   ([`DacSm::peek_addr`], [`DacSm::peek_pred`]); it pops with [`DacSm::deq_addr`]
//!   or [`DacSm::deq_pred`]. Whether prefetched data has arrived is the memory
//!   model's business (it owns the L1 and its [`super::LockTable`]).
//!
//! The head entry is expanded warp by warp. Each CTA has its own cursor (the
//! per-CTA accumulated register, §4.2 ⑥), so when one warp's queue is full or one
//! CTA is held at a barrier the unit moves on to another CTA (round robin) instead
//! of stalling. An expansion occupies the unit for its cost in cycles
//! ([`super::DacConfig::aeu_cycles`], [`super::DacConfig::peu_cycles`]); its
//! record enters the warp's queue (and its early requests leave) when it finishes.
//! Only the head entry is worked on: the AEU and PEU do not overlap.

use super::aeu::{self, AddrTuple, AeuError, WarpAddrRecord};
use super::peu::{self, PeuPath};
use super::queues::{BoundedQueue, PerWarpQueues, QueueStats};
use super::tuple::{GeomError, PredTuple, WarpGeom, DIMS};
use super::DacConfig;
use std::fmt;

/// What the affine warp enqueues.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Enq {
    /// `enq.data`: expand, request the lines early, queue the records.
    Data(AddrTuple),
    /// `enq.addr`: expand and queue the records.
    Addr(AddrTuple),
    /// `enq.pred`: queue each warp's mask.
    Pred(PredTuple),
}

impl Enq {
    /// True when the entry fills the predicate queues (else the address queues).
    pub fn is_pred(&self) -> bool {
        matches!(self, Enq::Pred(_))
    }
}

/// A CTA of the batch the affine warp serves: its warps occupy the consecutive warp
/// slots from `first_warp_slot`, one per `warp_size` threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CtaSlot {
    pub ctaid: [u32; DIMS],
    pub block_dim: [u32; DIMS],
    pub first_warp_slot: usize,
}

/// A PWAQ entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddrEntry {
    /// The warp's lines, or why the tuple could not be expanded (the warp then
    /// computes its addresses itself; the functional model faults if it must).
    pub record: Result<WarpAddrRecord, AeuError>,
    /// From `enq.data` (its lines were requested early and locked).
    pub data: bool,
    /// The ATQ entry's sequence number (0, 1, … in `enqueue` order).
    pub seq: u64,
    /// The cycle the record entered the queue.
    pub ready_cycle: u64,
}

/// A PWPQ entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PredEntry {
    pub mask: u32,
    pub path: PeuPath,
    pub seq: u64,
    pub ready_cycle: u64,
}

/// An early memory request of `enq.data` for one line of one warp's record: the
/// memory model looks it up in L1, requests it on a miss, and locks its way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EarlyRequest {
    pub warp_slot: usize,
    pub line: u64,
    pub seq: u64,
    pub cycle: u64,
}

/// A batch or configuration the engine cannot serve.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DacError {
    Config(&'static str),
    Geom(GeomError),
    /// A CTA's warps run past the SM's warp slots or overlap another CTA's.
    WarpSlots {
        cta: usize,
    },
}

impl fmt::Display for DacError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DacError::Config(m) => write!(f, "DAC configuration: {m}"),
            DacError::Geom(e) => e.fmt(f),
            DacError::WarpSlots { cta } => {
                write!(f, "CTA {cta}'s warps exceed or overlap the SM's warp slots")
            }
        }
    }
}

impl std::error::Error for DacError {}

/// What the expansion hardware did, per cycle class and per path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DacStats {
    pub cycles: u64,
    /// Cycles the AEU / PEU worked.
    pub aeu_busy: u64,
    pub peu_busy: u64,
    /// Cycles with an empty ATQ and nothing in flight.
    pub idle: u64,
    /// Cycles the head entry waited because every warp it still had to serve had a
    /// full queue (back-pressure from the non-affine warps).
    pub stall_queue_full: u64,
    /// Cycles the head entry waited for CTAs to pass a barrier.
    pub stall_barrier: u64,
    /// Records and masks produced.
    pub addr_records: u64,
    pub pred_masks: u64,
    pub lines: u64,
    pub early_requests: u64,
    pub aeu_errors: u64,
    pub peu_uniform: u64,
    pub peu_fast: u64,
    pub peu_slow: u64,
    /// `enqueue` calls refused because the ATQ was full.
    pub enq_refused: u64,
    /// Cycles a finished `enq.data` record could not leave because the L1 side
    /// refused it (back-pressure: the AEU's previous requests not yet sent, see
    /// [`DacSm::cycle_admit`]).
    pub stall_l1: u64,
}

struct Entry {
    enq: Enq,
    epoch: u32,
    seq: u64,
}

struct CtaState {
    slot: CtaSlot,
    warps: u32,
    barriers_passed: u32,
    next_warp: u32,
}

enum Output {
    Addr(AddrEntry),
    Pred(PredEntry),
}

struct Pending {
    warp_slot: usize,
    /// The batch CTA whose cursor produced it.
    cta: usize,
    out: Output,
}

/// One SM's ATQ, expansion units and per-warp queues.
pub struct DacSm {
    cfg: DacConfig,
    atq: BoundedQueue<Entry>,
    pwaq: PerWarpQueues<AddrEntry>,
    pwpq: PerWarpQueues<PredEntry>,
    ctas: Vec<CtaState>,
    epoch: u32,
    next_seq: u64,
    rr: usize,
    busy: u32,
    pending: Option<Pending>,
    now: u64,
    stats: DacStats,
}

impl DacSm {
    /// The hardware of an SM with `warp_slots` non-affine warp slots.
    pub fn new(cfg: DacConfig, warp_slots: usize) -> Result<DacSm, DacError> {
        cfg.validate().map_err(DacError::Config)?;
        Ok(DacSm {
            atq: BoundedQueue::new(cfg.atq_entries as usize),
            pwaq: PerWarpQueues::new(warp_slots, cfg.pwaq_entries as usize),
            pwpq: PerWarpQueues::new(warp_slots, cfg.pwpq_entries as usize),
            cfg,
            ctas: vec![],
            epoch: 0,
            next_seq: 0,
            rr: 0,
            busy: 0,
            pending: None,
            now: 0,
            stats: DacStats::default(),
        })
    }

    /// Starts serving a new batch of concurrent CTAs (a new run of the affine warp):
    /// empties the ATQ and the batch's own warp queues and resets the barrier counts.
    /// Call it once the previous batch is drained ([`DacSm::is_drained`]); warps of
    /// earlier batches still running keep their queues.
    pub fn start_batch(&mut self, ctas: &[CtaSlot]) -> Result<(), DacError> {
        let mut used = vec![false; self.pwaq.len()];
        let mut states = Vec::with_capacity(ctas.len());
        for (i, c) in ctas.iter().enumerate() {
            let g = WarpGeom {
                block_dim: c.block_dim,
                ctaid: c.ctaid,
                warp: 0,
                warp_size: self.cfg.warp_size,
            };
            g.validate().map_err(DacError::Geom)?;
            let warps = g.warps_per_block();
            let slots = c.first_warp_slot..c.first_warp_slot + warps as usize;
            if slots.end > used.len() || used[slots.clone()].iter().any(|&u| u) {
                return Err(DacError::WarpSlots { cta: i });
            }
            used[slots].iter_mut().for_each(|u| *u = true);
            states.push(CtaState {
                slot: *c,
                warps,
                barriers_passed: 0,
                next_warp: 0,
            });
        }
        self.ctas = states;
        self.atq.clear();
        // Only the batch's own slots start empty: warps of the previous batch that
        // are still running keep the records already expanded for them.
        for w in self.batch_slots().collect::<Vec<_>>() {
            if let Some(q) = self.pwaq.get_mut(w) {
                q.clear();
            }
            if let Some(q) = self.pwpq.get_mut(w) {
                q.clear();
            }
        }
        (self.epoch, self.rr, self.busy, self.pending) = (0, 0, 0, None);
        Ok(())
    }

    /// §4.1 ⑨: the affine warp's `enq` may issue: the ATQ has room and none of the
    /// batch's per-warp predicate queues is full. (Full address queues hold up the
    /// AEU, which then leaves tuples in the ATQ, so they block `enq` through it.)
    pub fn can_enqueue(&self) -> bool {
        !self.atq.is_full() && !self.pwpq.any_full(self.batch_slots())
    }

    /// The affine warp's `enq`: appends the tuple to the ATQ, or hands it back when
    /// the ATQ is full (the affine warp stalls).
    pub fn enqueue(&mut self, enq: Enq) -> Result<(), Enq> {
        let e = Entry {
            enq,
            epoch: self.epoch,
            seq: self.next_seq,
        };
        match self.atq.try_push(e) {
            Ok(()) => {
                self.next_seq += 1;
                Ok(())
            }
            Err(e) => {
                self.stats.enq_refused += 1;
                Err(e.enq)
            }
        }
    }

    /// The affine warp executed a barrier: later entries wait for each CTA's pass.
    pub fn affine_barrier(&mut self) {
        self.epoch += 1;
    }

    /// Batch CTA `cta`'s non-affine warps passed a barrier. Ignored for an index
    /// outside the batch.
    pub fn cta_passed_barrier(&mut self, cta: usize) {
        if let Some(c) = self.ctas.get_mut(cta) {
            c.barriers_passed += 1;
        }
    }

    /// One cycle of the expansion units at cycle `now`; early requests of `enq.data`
    /// expansions finishing this cycle are appended to `requests`.
    pub fn cycle(&mut self, now: u64, requests: &mut Vec<EarlyRequest>) {
        self.cycle_admit(now, requests, &mut |_| true);
    }

    /// [`DacSm::cycle`] with the memory side's say on early requests: an `enq.data`
    /// record whose expansion is done leaves (its record queued, its requests
    /// issued) only when `admit(record)` holds (the timing model: the AEU's request
    /// buffer has room). Otherwise the AEU drops the expansion, leaves that CTA's
    /// cursor on the warp and moves on to the next CTA (round robin, as for a full
    /// queue, §4.2 ⑥), coming back to it later (counted in [`DacStats::stall_l1`]).
    pub fn cycle_admit(
        &mut self,
        now: u64,
        requests: &mut Vec<EarlyRequest>,
        admit: &mut dyn FnMut(&WarpAddrRecord) -> bool,
    ) {
        self.now = now;
        self.stats.cycles += 1;
        self.atq.sample();
        self.pwaq.sample();
        self.pwpq.sample();
        if self.pending.is_some() {
            self.count_busy();
            if self.busy > 1 {
                self.busy -= 1;
                return;
            }
            self.try_finish(requests, admit);
            return;
        }
        self.start_next(requests, admit);
    }

    /// Finishes the pending expansion unless it is an `enq.data` record the L1
    /// cannot lock yet.
    fn try_finish(
        &mut self,
        requests: &mut Vec<EarlyRequest>,
        admit: &mut dyn FnMut(&WarpAddrRecord) -> bool,
    ) {
        if let Some(Pending {
            out:
                Output::Addr(AddrEntry {
                    record: Ok(r),
                    data: true,
                    ..
                }),
            ..
        }) = &self.pending
        {
            if !admit(r) {
                let ci = self.pending.take().map_or(usize::MAX, |p| p.cta);
                if let Some(c) = self.ctas.get_mut(ci) {
                    c.next_warp = c.next_warp.saturating_sub(1);
                }
                self.busy = 0;
                self.stats.stall_l1 += 1;
                return;
            }
        }
        self.finish(requests);
    }

    /// Starts the head entry's next warp expansion, popping finished entries.
    fn start_next(
        &mut self,
        requests: &mut Vec<EarlyRequest>,
        admit: &mut dyn FnMut(&WarpAddrRecord) -> bool,
    ) {
        loop {
            let Some(head) = self.atq.front() else {
                self.stats.idle += 1;
                return;
            };
            if self.ctas.iter().all(|c| c.next_warp >= c.warps) {
                self.atq.pop();
                self.ctas.iter_mut().for_each(|c| c.next_warp = 0);
                continue;
            }
            let (epoch, pred) = (head.epoch, head.enq.is_pred());
            let Some(ci) = self.pick_cta(epoch, pred) else {
                let barrier = self
                    .ctas
                    .iter()
                    .any(|c| c.next_warp < c.warps && c.barriers_passed < epoch);
                if barrier {
                    self.stats.stall_barrier += 1;
                } else {
                    self.stats.stall_queue_full += 1;
                }
                return;
            };
            self.rr = ci + 1;
            self.expand_for(ci);
            self.count_busy();
            if self.busy <= 1 {
                self.try_finish(requests, admit);
            } else {
                self.busy -= 1;
            }
            return;
        }
    }

    /// Round robin from `rr`: a CTA with warps left, past the entry's barrier, whose
    /// next warp's queue has room.
    fn pick_cta(&self, epoch: u32, pred: bool) -> Option<usize> {
        let n = self.ctas.len();
        (0..n).map(|k| (self.rr + k) % n).find(|&i| {
            let c = &self.ctas[i];
            let slot = c.slot.first_warp_slot + c.next_warp as usize;
            let room = if pred {
                self.pwpq.get(slot).is_some_and(|q| !q.is_full())
            } else {
                self.pwaq.get(slot).is_some_and(|q| !q.is_full())
            };
            c.next_warp < c.warps && c.barriers_passed >= epoch && room
        })
    }

    /// Expands the head entry for CTA `ci`'s next warp and makes it pending.
    fn expand_for(&mut self, ci: usize) {
        let Some(head) = self.atq.front() else {
            return;
        };
        let c = &mut self.ctas[ci];
        let g = WarpGeom {
            block_dim: c.slot.block_dim,
            ctaid: c.slot.ctaid,
            warp: c.next_warp,
            warp_size: self.cfg.warp_size,
        };
        let first_of_cta = c.next_warp == 0;
        c.next_warp += 1;
        let warp_slot = c.slot.first_warp_slot + g.warp as usize;
        let (out, cycles) = match head.enq {
            Enq::Data(a) | Enq::Addr(a) => {
                let record = aeu::expand(&a, &g, self.cfg.line_size);
                let cycles = match &record {
                    Ok(r) => self.cfg.aeu_cycles(r, first_of_cta),
                    Err(_) => 1,
                };
                let data = matches!(head.enq, Enq::Data(_));
                let e = AddrEntry {
                    record,
                    data,
                    seq: head.seq,
                    ready_cycle: 0,
                };
                (Output::Addr(e), cycles)
            }
            Enq::Pred(p) => {
                // The geometry was validated by `start_batch`.
                let o = peu::expand(&p, &g).unwrap_or(peu::PredOutcome {
                    mask: 0,
                    path: PeuPath::Slow,
                    compares: 0,
                });
                let e = PredEntry {
                    mask: o.mask,
                    path: o.path,
                    seq: head.seq,
                    ready_cycle: 0,
                };
                (Output::Pred(e), self.cfg.peu_cycles(o.path))
            }
        };
        self.busy = cycles.max(1);
        self.pending = Some(Pending {
            warp_slot,
            cta: ci,
            out,
        });
    }

    fn count_busy(&mut self) {
        match self.pending {
            Some(Pending {
                out: Output::Pred(_),
                ..
            }) => self.stats.peu_busy += 1,
            Some(_) => self.stats.aeu_busy += 1,
            None => {}
        }
    }

    /// Pushes the pending result into its warp's queue (room was checked when the
    /// expansion started, and only `deq`s touched the queue since).
    fn finish(&mut self, requests: &mut Vec<EarlyRequest>) {
        let Some(p) = self.pending.take() else {
            return;
        };
        self.busy = 0;
        let now = self.now;
        match p.out {
            Output::Addr(mut e) => {
                e.ready_cycle = now;
                self.stats.addr_records += 1;
                match &e.record {
                    Ok(r) => {
                        self.stats.lines += u64::from(r.transactions());
                        if e.data {
                            for l in &r.lines {
                                requests.push(EarlyRequest {
                                    warp_slot: p.warp_slot,
                                    line: l.line,
                                    seq: e.seq,
                                    cycle: now,
                                });
                                self.stats.early_requests += 1;
                            }
                        }
                    }
                    Err(_) => self.stats.aeu_errors += 1,
                }
                if let Some(q) = self.pwaq.get_mut(p.warp_slot) {
                    let pushed = q.try_push(e);
                    debug_assert!(pushed.is_ok(), "room was reserved");
                }
            }
            Output::Pred(mut e) => {
                e.ready_cycle = now;
                self.stats.pred_masks += 1;
                match e.path {
                    PeuPath::Uniform => self.stats.peu_uniform += 1,
                    PeuPath::Fast => self.stats.peu_fast += 1,
                    PeuPath::Slow => self.stats.peu_slow += 1,
                }
                if let Some(q) = self.pwpq.get_mut(p.warp_slot) {
                    let pushed = q.try_push(e);
                    debug_assert!(pushed.is_ok(), "room was reserved");
                }
            }
        }
        if self.ctas.iter().all(|c| c.next_warp >= c.warps) {
            self.atq.pop();
            self.ctas.iter_mut().for_each(|c| c.next_warp = 0);
        }
    }

    fn batch_slots(&self) -> impl Iterator<Item = usize> + '_ {
        self.ctas
            .iter()
            .flat_map(|c| c.slot.first_warp_slot..c.slot.first_warp_slot + c.warps as usize)
    }

    /// The next address record of warp slot `w`, if it has arrived.
    pub fn peek_addr(&self, w: usize) -> Option<&AddrEntry> {
        self.pwaq.get(w)?.front()
    }

    /// The next predicate mask of warp slot `w`, if it has arrived.
    pub fn peek_pred(&self, w: usize) -> Option<&PredEntry> {
        self.pwpq.get(w)?.front()
    }

    /// A non-affine `ld [deq.data]` / `st [deq.addr]`: pops warp `w`'s next record
    /// (`None`, counted as an empty pop, when it has not arrived: the warp stalls).
    pub fn deq_addr(&mut self, w: usize) -> Option<AddrEntry> {
        self.pwaq.get_mut(w)?.pop()
    }

    /// A non-affine `deq.pred`: pops warp `w`'s next mask.
    pub fn deq_pred(&mut self, w: usize) -> Option<PredEntry> {
        self.pwpq.get_mut(w)?.pop()
    }

    /// True when every enqueued entry has been expanded for every warp.
    pub fn is_drained(&self) -> bool {
        self.atq.is_empty() && self.pending.is_none()
    }

    pub fn stats(&self) -> &DacStats {
        &self.stats
    }

    pub fn atq_stats(&self) -> &QueueStats {
        self.atq.stats()
    }

    /// The per-warp address queues' statistics summed over the warp slots.
    pub fn pwaq_stats(&self) -> QueueStats {
        self.pwaq.total_stats()
    }

    pub fn pwpq_stats(&self) -> QueueStats {
        self.pwpq.total_stats()
    }

    pub fn config(&self) -> &DacConfig {
        &self.cfg
    }
}
