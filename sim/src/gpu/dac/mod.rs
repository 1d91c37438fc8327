//! The hardware of Decoupled Affine Computation (Wang and Lin, ISCA'17, "the
//! paper"; `../shared/papers/000_5b8d47e72f1535c5.txt`) as standalone units of the
//! `dac-gpu` simulator, for the timing model to call cycle by cycle:
//!
//! * [`mod@tuple`]: affine tuples (`base + Σ stride·tid + Σ block offset·ctaid`, §3),
//!   predicate tuples, and the geometry of the warps they expand for;
//! * [`aeu`]: the Address Expansion Unit (§4.2): a warp's line addresses and word
//!   masks, with the row adjustment of 2-D and 3-D blocks;
//! * [`peu`]: the Predicate Expansion Unit (§4.3): uniform, 2-compare and per-lane
//!   paths;
//! * [`queues`]: the Affine Tuple Queue and per-warp address / predicate queues, with
//!   back-pressure and occupancy statistics (§4.1);
//! * [`locks`]: the L1 lock counters of early requests, at most N−1 of N ways
//!   locked (§4.2);
//! * [`engine`]: one SM's ATQ, expansion units and queues together, with the barrier
//!   gate (§4.1, §4.2);
//! * [`prefetch`]: early requests from issue to use: readiness for `deq.data`, the
//!   locks held in between, prefetch timeliness.
//!
//! Sizes and costs are in [`DacConfig`]. The design page is
//! `lang-spec/dac-hardware.md`.

pub mod aeu;
pub mod engine;
pub mod locks;
pub mod peu;
pub mod prefetch;
pub mod queues;
pub mod tuple;

#[cfg(test)]
mod engine_tests;
#[cfg(test)]
mod testutil;

pub use aeu::{AddrTuple, AeuError, LineAccess, SelAddrTuple, WarpAddrRecord};
pub use engine::{AddrEntry, CtaSlot, DacError, DacSm, DacStats, EarlyRequest, Enq, PredEntry};
pub use locks::{LockError, LockStats, LockTable};
pub use peu::{PeuPath, PredOutcome};
pub use prefetch::{PrefetchStats, PrefetchTracker};
pub use queues::{BoundedQueue, PerWarpQueues, QueueStats};
pub use tuple::{AffineTuple, CmpOp, IntType, PredTuple, WarpGeom};

use super::config::{AtqCursor, BarrierGate, GpuConfig};

/// Sizes and costs of the DAC hardware of one SM.
///
/// The paper's transcription at hand gives no queue sizes or counter widths (its
/// configuration table is not in it), so the queue sizes are the `dac-gpu`
/// presets' (`atq_entries`, `pwaq_entries`, `pwpq_entries` in `sim/configs/*.toml`)
/// and the costs follow the paper's description of the units: one integer ALU in
/// the AEU stepping one 128-byte line per cycle (§4.2), two comparators in the PEU,
/// and its per-lane fallback on the SIMT lanes (§4.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DacConfig {
    /// Threads per warp (at most 32: masks are `u32`).
    pub warp_size: u32,
    /// L1 line size in bytes (the AEU's line step; 128 on the GTX 480).
    pub line_size: u32,
    /// Affine Tuple Queue entries per SM.
    pub atq_entries: u32,
    /// Per-warp address queue (PWAQ) entries.
    pub pwaq_entries: u32,
    /// Per-warp predicate queue (PWPQ) entries.
    pub pwpq_entries: u32,
    /// The largest value of a line's lock counter (15: a 4-bit counter).
    pub lock_counter_max: u32,
    /// AEU cycles per line step of the accumulator.
    pub aeu_cycles_per_step: u32,
    /// AEU cycles to compute a CTA's start address (`base + block offset × block
    /// index`, once per CTA and tuple, §4.2 ①).
    pub aeu_cta_setup_cycles: u32,
    /// PEU cycles per warp mask on the uniform, fast and slow paths.
    pub peu_uniform_cycles: u32,
    pub peu_fast_cycles: u32,
    pub peu_slow_cycles: u32,
    /// Affine warp contexts, each with its own ATQ: batches of CTAs served at once
    /// (1: the paper's one affine warp per SM).
    pub affine_contexts: u32,
    /// Which expansions wait for a CTA to pass the affine warp's barrier.
    pub barrier_gate: BarrierGate,
    /// Which ATQ entry a CTA's expansion may work on.
    pub atq_cursor: AtqCursor,
}

impl Default for DacConfig {
    /// The GTX 480 values.
    fn default() -> DacConfig {
        DacConfig {
            warp_size: 32,
            line_size: 128,
            atq_entries: 8,
            pwaq_entries: 4,
            pwpq_entries: 4,
            lock_counter_max: 15,
            aeu_cycles_per_step: 1,
            aeu_cta_setup_cycles: 1,
            peu_uniform_cycles: 1,
            peu_fast_cycles: 1,
            // 32 compares on a scheduler's 16 SIMT lanes.
            peu_slow_cycles: 2,
            affine_contexts: 1,
            barrier_gate: BarrierGate::Requests,
            atq_cursor: AtqCursor::Head,
        }
    }
}

impl DacConfig {
    /// The machine's values: warp and line size, queue sizes, lock counter width, AEU
    /// step cost, and the slow PEU path's `warp_size / simt_lanes_per_scheduler`
    /// cycles; costs otherwise as [`DacConfig::default`].
    pub fn from_gpu(g: &GpuConfig) -> DacConfig {
        let lanes = g.simt_lanes_per_scheduler.max(1);
        DacConfig {
            warp_size: g.warp_size,
            line_size: g.line_size,
            atq_entries: g.atq_entries,
            pwaq_entries: g.pwaq_entries,
            pwpq_entries: g.pwpq_entries,
            lock_counter_max: g.lock_counter_max,
            aeu_cycles_per_step: g.aeu_cycles_per_step,
            peu_slow_cycles: g.warp_size.div_ceil(lanes).max(1),
            affine_contexts: g.affine_contexts.max(1),
            barrier_gate: g.barrier_gate,
            atq_cursor: g.atq_cursor,
            ..DacConfig::default()
        }
    }

    /// The L1 lock table of machine `g` with this configuration's counters.
    pub fn l1_locks(&self, g: &GpuConfig) -> Result<LockTable, locks::LockTableError> {
        LockTable::for_cache(g.l1_size, g.line_size, g.l1_assoc, self.lock_counter_max)
    }

    /// Checks the values the units rely on.
    pub fn validate(&self) -> Result<(), &'static str> {
        if self.warp_size == 0 || self.warp_size > tuple::MAX_WARP {
            return Err("warp_size must be 1..=32");
        }
        if !self.line_size.is_power_of_two() {
            return Err("line_size must be a power of two");
        }
        if self.atq_entries == 0 || self.pwaq_entries == 0 || self.pwpq_entries == 0 {
            return Err("queues need at least one entry");
        }
        if self.affine_contexts == 0 {
            return Err("affine_contexts must be at least 1");
        }
        if self.lock_counter_max == 0 {
            return Err("lock_counter_max must be at least 1");
        }
        Ok(())
    }

    /// Cycles the AEU spends on a warp's record: one ALU step per line step, plus
    /// the CTA's start address for its first warp.
    pub fn aeu_cycles(&self, r: &WarpAddrRecord, first_warp_of_cta: bool) -> u32 {
        let setup = if first_warp_of_cta {
            self.aeu_cta_setup_cycles
        } else {
            0
        };
        r.steps.max(1) * self.aeu_cycles_per_step + setup
    }

    /// Cycles the PEU spends on a warp's mask.
    pub fn peu_cycles(&self, path: PeuPath) -> u32 {
        match path {
            PeuPath::Uniform => self.peu_uniform_cycles,
            PeuPath::Fast => self.peu_fast_cycles,
            PeuPath::Slow => self.peu_slow_cycles,
        }
    }
}
