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
//! An entry is expanded warp by warp. Each CTA has its own cursor (the per-CTA
//! accumulated register, §4.2 ⑥), so when one warp's queue is full or one CTA is
//! held at a barrier the unit moves on to another CTA (round robin) instead of
//! stalling. Which entry a CTA's cursor may be on is [`super::DacConfig::atq_cursor`]:
//! the head entry for every CTA ([`AtqCursor::Head`]), or each CTA's own next entry
//! ([`AtqCursor::Cta`]: a CTA that has the head goes on to the next entry while a
//! slower one finishes the head). Either way an entry leaves the ATQ once every CTA
//! has it. An expansion occupies the unit for its cost in cycles
//! ([`super::DacConfig::aeu_cycles`], [`super::DacConfig::peu_cycles`]); its
//! record enters the warp's queue (and its early requests leave) when it finishes.
//! One expansion at a time: the AEU and PEU do not overlap.
//!
//! Affine warp contexts (`DacConfig::affine_contexts`): each runs the affine stream
//! for one batch with its own ATQ, barrier epoch and CTA cursors; the unit serves the
//! head entries of every context round robin over all their CTAs, so a new batch is
//! served while an older one drains. A CTA whose warp slots a newer batch takes (its
//! block finished) is retired.

use super::aeu::{self, AddrTuple, AeuError, SelAddrTuple, WarpAddrRecord};
use super::peu::{self, PeuPath};
use super::queues::{BoundedQueue, PerWarpQueues, QueueStats};
use super::tuple::{GeomError, PredTuple, WarpGeom, DIMS};
use super::{AtqCursor, BarrierGate, DacConfig};
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
    /// `enq.data.sel`: a select tuple, expanded with the PEU's compare per warp,
    /// requested early like `Data`.
    DataSel(SelAddrTuple),
    /// `enq.addr.sel`: a select tuple's records.
    AddrSel(SelAddrTuple),
}

impl Enq {
    /// True when the entry fills the predicate queues (else the address queues).
    pub fn is_pred(&self) -> bool {
        matches!(self, Enq::Pred(_))
    }

    /// True when its expansion issues early memory requests.
    pub fn requests(&self) -> bool {
        matches!(self, Enq::Data(_) | Enq::DataSel(_))
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
    /// Records of select tuples (`enq.*.sel`), each also costing the PEU's compares.
    pub sel_records: u64,
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
    /// The ATQ entry its cursor is on, counted from the head (at most 1 under
    /// [`AtqCursor::Head`]: past the head, waiting for it to leave).
    entry: usize,
    /// The next warp to get that entry.
    next_warp: u32,
    /// Its warp slots went to a block of a later batch (this CTA had finished):
    /// it is served no more.
    retired: bool,
}

impl CtaState {
    /// Has every warp the context's head entry, or needs none.
    fn done_with_head(&self) -> bool {
        self.retired || self.entry > 0
    }

    /// Moves the cursor to the next entry once every warp has the current one.
    fn advance_if_done(&mut self) {
        if !self.retired && self.next_warp >= self.warps {
            self.entry += 1;
            self.next_warp = 0;
        }
    }

    fn warp_slots(&self) -> std::ops::Range<usize> {
        self.slot.first_warp_slot..self.slot.first_warp_slot + self.warps as usize
    }
}

/// One affine warp context's share of the hardware: its ATQ, the CTAs of the batch
/// it serves (each with its accumulated-address cursor) and its barrier epoch.
struct Context {
    atq: BoundedQueue<Entry>,
    ctas: Vec<CtaState>,
    epoch: u32,
}

enum Output {
    Addr(AddrEntry),
    Pred(PredEntry),
}

struct Pending {
    warp_slot: usize,
    /// The context and batch CTA whose cursor produced it.
    ctx: usize,
    cta: usize,
    out: Output,
}

/// One SM's ATQs, expansion units and per-warp queues.
pub struct DacSm {
    cfg: DacConfig,
    ctxs: Vec<Context>,
    pwaq: PerWarpQueues<AddrEntry>,
    pwpq: PerWarpQueues<PredEntry>,
    next_seq: u64,
    /// Round robin position over the (context, CTA) pairs.
    rr: usize,
    busy: u32,
    pending: Option<Pending>,
    now: u64,
    stats: DacStats,
}

impl DacSm {
    /// The hardware of an SM with `warp_slots` non-affine warp slots and
    /// `cfg.affine_contexts` affine warp contexts.
    pub fn new(cfg: DacConfig, warp_slots: usize) -> Result<DacSm, DacError> {
        cfg.validate().map_err(DacError::Config)?;
        Ok(DacSm {
            ctxs: (0..cfg.affine_contexts)
                .map(|_| Context {
                    atq: BoundedQueue::new(cfg.atq_entries as usize),
                    ctas: vec![],
                    epoch: 0,
                })
                .collect(),
            pwaq: PerWarpQueues::new(warp_slots, cfg.pwaq_entries as usize),
            pwpq: PerWarpQueues::new(warp_slots, cfg.pwpq_entries as usize),
            cfg,
            next_seq: 0,
            rr: 0,
            busy: 0,
            pending: None,
            now: 0,
            stats: DacStats::default(),
        })
    }

    /// The affine warp contexts (batches served at once).
    pub fn contexts(&self) -> usize {
        self.ctxs.len()
    }

    /// [`DacSm::start_batch_in`] context 0.
    pub fn start_batch(&mut self, ctas: &[CtaSlot]) -> Result<(), DacError> {
        self.start_batch_in(0, ctas)
    }

    /// Starts serving a new batch of concurrent CTAs in context `c` (a new run of
    /// its affine warp): empties the context's ATQ and the batch's own warp queues
    /// and resets its barrier counts. Call it once the context is drained
    /// ([`DacSm::is_drained_in`]). Warps of earlier batches still running keep
    /// their queues, and batches in other contexts go on being served; a CTA of
    /// another context whose warp slots the new batch takes (a finished block's
    /// slots, reused) is retired. The batch's CTAs have the ids
    /// [`DacSm::cta_id`]`(c, i)`.
    pub fn start_batch_in(&mut self, c: usize, ctas: &[CtaSlot]) -> Result<(), DacError> {
        if c >= self.ctxs.len() {
            return Err(DacError::Config("no such affine warp context"));
        }
        let mut used = vec![false; self.pwaq.len()];
        let mut states = Vec::with_capacity(ctas.len());
        for (i, cs) in ctas.iter().enumerate() {
            let g = WarpGeom {
                block_dim: cs.block_dim,
                ctaid: cs.ctaid,
                warp: 0,
                warp_size: self.cfg.warp_size,
            };
            g.validate().map_err(DacError::Geom)?;
            let warps = g.warps_per_block();
            let slots = cs.first_warp_slot..cs.first_warp_slot + warps as usize;
            if slots.end > used.len() || used[slots.clone()].iter().any(|&u| u) {
                return Err(DacError::WarpSlots { cta: i });
            }
            used[slots].iter_mut().for_each(|u| *u = true);
            states.push(CtaState {
                slot: *cs,
                warps,
                barriers_passed: 0,
                entry: 0,
                next_warp: 0,
                retired: false,
            });
        }
        if self.pending.as_ref().is_some_and(|p| p.ctx == c) {
            (self.busy, self.pending) = (0, None);
        }
        // Finished blocks of other batches whose slots the new batch reuses.
        for (k, ctx) in self.ctxs.iter_mut().enumerate() {
            for cta in ctx.ctas.iter_mut().filter(|_| k != c) {
                if cta
                    .warp_slots()
                    .any(|w| used.get(w).copied().unwrap_or(false))
                {
                    cta.retired = true;
                }
            }
        }
        let ctx = &mut self.ctxs[c];
        ctx.ctas = states;
        ctx.atq.clear();
        ctx.epoch = 0;
        // Only the batch's own slots start empty: warps of other batches that are
        // still running keep the records already expanded for them.
        for (w, _) in used.iter().enumerate().filter(|(_, &u)| u) {
            if let Some(q) = self.pwaq.get_mut(w) {
                q.clear();
            }
            if let Some(q) = self.pwpq.get_mut(w) {
                q.clear();
            }
        }
        self.rr = 0;
        self.pop_finished(c);
        Ok(())
    }

    /// The id of batch CTA `i` of context `c` for [`DacSm::cta_passed_barrier`].
    pub fn cta_id(&self, c: usize, i: usize) -> usize {
        c * self.pwaq.len().max(1) + i
    }

    /// [`DacSm::can_enqueue_in`] context 0.
    pub fn can_enqueue(&self) -> bool {
        self.can_enqueue_in(0)
    }

    /// §4.1 ⑨: context `c`'s affine warp may issue an `enq`: its ATQ has room and
    /// none of its batch's per-warp predicate queues is full. (Full address queues
    /// hold up the AEU, which then leaves tuples in the ATQ, so they block `enq`
    /// through it.)
    pub fn can_enqueue_in(&self, c: usize) -> bool {
        self.ctxs.get(c).is_some_and(|ctx| {
            !ctx.atq.is_full()
                && !self.pwpq.any_full(
                    ctx.ctas
                        .iter()
                        .filter(|t| !t.retired)
                        .flat_map(CtaState::warp_slots),
                )
        })
    }

    /// [`DacSm::enqueue_in`] context 0.
    pub fn enqueue(&mut self, enq: Enq) -> Result<(), Enq> {
        self.enqueue_in(0, enq)
    }

    /// Context `c`'s affine warp's `enq`: appends the tuple to its ATQ, or hands it
    /// back when the ATQ is full (the affine warp stalls).
    pub fn enqueue_in(&mut self, c: usize, enq: Enq) -> Result<(), Enq> {
        let seq = self.next_seq;
        let Some(ctx) = self.ctxs.get_mut(c) else {
            return Err(enq);
        };
        let e = Entry {
            enq,
            epoch: ctx.epoch,
            seq,
        };
        match ctx.atq.try_push(e) {
            Ok(()) => {
                self.next_seq += 1;
                self.pop_finished(c);
                Ok(())
            }
            Err(e) => {
                self.stats.enq_refused += 1;
                Err(e.enq)
            }
        }
    }

    /// [`DacSm::affine_barrier_in`] context 0.
    pub fn affine_barrier(&mut self) {
        self.affine_barrier_in(0);
    }

    /// Context `c`'s affine warp executed a barrier: its later entries wait for
    /// each CTA's pass.
    pub fn affine_barrier_in(&mut self, c: usize) {
        if let Some(ctx) = self.ctxs.get_mut(c) {
            ctx.epoch += 1;
        }
    }

    /// The CTA with id `cta` ([`DacSm::cta_id`]; for context 0 its index in the
    /// batch) passed a barrier with its non-affine warps. Ignored for an unknown id.
    pub fn cta_passed_barrier(&mut self, cta: usize) {
        let n = self.pwaq.len().max(1);
        if let Some(c) = self
            .ctxs
            .get_mut(cta / n)
            .and_then(|x| x.ctas.get_mut(cta % n))
        {
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
        for ctx in self.ctxs.iter_mut() {
            ctx.atq.sample();
        }
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
    /// cannot take yet.
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
                if let Some(p) = self.pending.take() {
                    if let Some(c) = self.ctxs.get_mut(p.ctx).and_then(|x| x.ctas.get_mut(p.cta)) {
                        c.next_warp = c.next_warp.saturating_sub(1);
                    }
                }
                self.busy = 0;
                self.stats.stall_l1 += 1;
                return;
            }
        }
        self.finish(requests);
    }

    /// Pops context `c`'s head entries that every CTA of its batch has (not while
    /// an expansion of its head is under way: it may still be refused and
    /// redone).
    fn pop_finished(&mut self, c: usize) {
        if self.pending.as_ref().is_some_and(|p| p.ctx == c) {
            return;
        }
        let Some(ctx) = self.ctxs.get_mut(c) else {
            return;
        };
        while !ctx.atq.is_empty() && ctx.ctas.iter().all(CtaState::done_with_head) {
            ctx.atq.pop();
            for t in ctx.ctas.iter_mut() {
                t.entry = t.entry.saturating_sub(1);
            }
        }
    }

    /// Starts the next warp expansion of some context's head entry.
    fn start_next(
        &mut self,
        requests: &mut Vec<EarlyRequest>,
        admit: &mut dyn FnMut(&WarpAddrRecord) -> bool,
    ) {
        if self.ctxs.iter().all(|x| x.atq.is_empty()) {
            self.stats.idle += 1;
            return;
        }
        let Some((c, ci)) = self.pick_cta() else {
            let barrier = self.ctxs.iter().any(|x| {
                x.ctas.iter().any(|t| {
                    self.cursor_entry(x, t)
                        .is_some_and(|e| !self.past_barrier(t, e))
                })
            });
            if barrier {
                self.stats.stall_barrier += 1;
            } else {
                self.stats.stall_queue_full += 1;
            }
            return;
        };
        self.rr = self.flat_index(c, ci) + 1;
        self.expand_for(c, ci);
        self.count_busy();
        if self.busy <= 1 {
            self.try_finish(requests, admit);
        } else {
            self.busy -= 1;
        }
    }

    /// The position of context `c`'s CTA `ci` in the round robin order.
    fn flat_index(&self, c: usize, ci: usize) -> usize {
        self.ctxs[..c].iter().map(|x| x.ctas.len()).sum::<usize>() + ci
    }

    /// Round robin from `rr` over every context's CTAs: one with warps left for its
    /// context's head entry, past the entry's barrier, whose next warp's queue has
    /// room.
    fn pick_cta(&self) -> Option<(usize, usize)> {
        let pairs: Vec<(usize, usize)> = self
            .ctxs
            .iter()
            .enumerate()
            .flat_map(|(c, x)| (0..x.ctas.len()).map(move |i| (c, i)))
            .collect();
        let n = pairs.len();
        (0..n).map(|k| pairs[(self.rr + k) % n]).find(|&(c, i)| {
            let x = &self.ctxs[c];
            let t = &x.ctas[i];
            let Some(entry) = self.cursor_entry(x, t) else {
                return false;
            };
            let slot = t.slot.first_warp_slot + t.next_warp as usize;
            let room = if entry.enq.is_pred() {
                self.pwpq.get(slot).is_some_and(|q| !q.is_full())
            } else {
                self.pwaq.get(slot).is_some_and(|q| !q.is_full())
            };
            self.past_barrier(t, entry) && room
        })
    }

    /// The entry CTA `t` of context `x` is to expand next: `None` when it is
    /// retired, has every entry there is, or (under [`AtqCursor::Head`]) has the
    /// head and waits for the other CTAs.
    fn cursor_entry<'a>(&self, x: &'a Context, t: &CtaState) -> Option<&'a Entry> {
        if t.retired || t.entry > 0 && self.cfg.atq_cursor == AtqCursor::Head {
            return None;
        }
        // A cursor past its entry's last warp is advanced when that expansion
        // finishes ([`CtaState::advance_if_done`]).
        (t.next_warp < t.warps)
            .then(|| x.atq.get(t.entry))
            .flatten()
    }

    /// Whether the barrier gate lets `entry` be expanded for CTA `t`: `t` has
    /// passed the affine warp's barriers before it, or the entry issues no early
    /// request and the gate holds back only those ([`BarrierGate::Requests`]).
    fn past_barrier(&self, t: &CtaState, entry: &Entry) -> bool {
        t.barriers_passed >= entry.epoch
            || self.cfg.barrier_gate == BarrierGate::Requests && !entry.enq.requests()
    }

    /// Expands context `c`'s head entry for its CTA `ci`'s next warp and makes it
    /// pending.
    fn expand_for(&mut self, c: usize, ci: usize) {
        let x = &mut self.ctxs[c];
        let Some(head) = x.atq.get(x.ctas[ci].entry) else {
            return;
        };
        let t = &mut x.ctas[ci];
        let g = WarpGeom {
            block_dim: t.slot.block_dim,
            ctaid: t.slot.ctaid,
            warp: t.next_warp,
            warp_size: self.cfg.warp_size,
        };
        let first_of_cta = t.next_warp == 0;
        t.next_warp += 1;
        let warp_slot = t.slot.first_warp_slot + g.warp as usize;
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
            Enq::DataSel(s) | Enq::AddrSel(s) => {
                // The PEU's compares, then the AEU's line steps of the picked
                // addresses (§4.2, §4.3): the two units in sequence for this warp.
                let (record, cycles) = match aeu::expand_select(&s, &g, self.cfg.line_size) {
                    Ok((r, p)) => {
                        let c = self.cfg.peu_cycles(p.path) + self.cfg.aeu_cycles(&r, first_of_cta);
                        (Ok(r), c)
                    }
                    Err(e) => (Err(e), 1),
                };
                self.stats.sel_records += 1;
                let e = AddrEntry {
                    record,
                    data: matches!(head.enq, Enq::DataSel(_)),
                    seq: head.seq,
                    ready_cycle: 0,
                };
                (Output::Addr(e), cycles)
            }
            Enq::Pred(p) => {
                // The geometry was validated by `start_batch_in`.
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
            ctx: c,
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
        if let Some(t) = self.ctxs.get_mut(p.ctx).and_then(|x| x.ctas.get_mut(p.cta)) {
            t.advance_if_done();
        }
        self.pop_finished(p.ctx);
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

    /// True when every enqueued entry has been expanded for every warp, in every
    /// context.
    pub fn is_drained(&self) -> bool {
        (0..self.ctxs.len()).all(|c| self.is_drained_in(c))
    }

    /// True when every entry of context `c` has been expanded for every warp of its
    /// batch (its ATQ is empty and no expansion of it is under way).
    pub fn is_drained_in(&self, c: usize) -> bool {
        self.ctxs.get(c).is_none_or(|x| x.atq.is_empty())
            && self.pending.as_ref().is_none_or(|p| p.ctx != c)
    }

    pub fn stats(&self) -> &DacStats {
        &self.stats
    }

    /// The ATQs' statistics summed over the contexts.
    pub fn atq_stats(&self) -> QueueStats {
        let mut t = QueueStats::default();
        for x in &self.ctxs {
            t.merge(x.atq.stats());
        }
        t
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
