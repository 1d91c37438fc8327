//! Statistics of a dac-gpu run and their (name, value) listing for JSON reports.
//!
//! Counters are summed over the whole machine. Stall cycles are counted per warp
//! scheduler and cycle in which it issued nothing, by the most telling reason among
//! its warps: a warp waiting for a load (memory), for an arithmetic result or a busy
//! unit (dependency), at a barrier (barrier), or no warp at all (idle).

use std::fmt;

use crate::energy::{Energy, Events};

/// A statistic's value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StatValue {
    U64(u64),
    F64(f64),
}

impl fmt::Display for StatValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StatValue::U64(v) => write!(f, "{v}"),
            StatValue::F64(v) => write!(f, "{v:.4}"),
        }
    }
}

/// Why a scheduler issued nothing in a cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stall {
    Memory,
    Dependency,
    Barrier,
    /// DAC: a `deq` waits for its queue entry or its prefetched data.
    Queue,
    Idle,
}

/// Every counter of a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stats {
    pub warp_insts: u64,
    pub thread_insts: u64,
    pub blocks: u64,
    pub cycles: u64,
    /// Warp instructions issued by the uniform datapath (`.uni` or writing `%ur`);
    /// `warp_insts` counts them too.
    pub uniform_insts: u64,
    /// Lanes of the vector (non-uniform) warp instructions that are active and whose
    /// guard holds: the numerator of lane utilization (compiler-managed masks live in
    /// guards, so `thread_insts`, which counts active lanes, would miss them).
    pub vector_thread_insts: u64,
    pub theoretical_occupancy: f64,
    pub achieved_occupancy: f64,
    /// Resident warps summed over cycles and SMs (for achieved occupancy).
    pub warp_cycles: u64,
    pub global_load_insts: u64,
    /// Lanes of those loads that access memory (active, guard true): thread loads.
    pub global_load_lanes: u64,
    pub global_store_insts: u64,
    pub global_atomic_insts: u64,
    /// 128-byte transactions after coalescing.
    pub global_load_transactions: u64,
    pub global_store_transactions: u64,
    pub global_atomic_transactions: u64,
    pub local_transactions: u64,
    /// Warp instructions loading from and storing to local memory (register spills).
    pub local_load_insts: u64,
    pub local_store_insts: u64,
    pub shared_insts: u64,
    /// Extra shared-memory cycles from bank conflicts (a k-way conflict adds k - 1).
    pub shared_bank_conflicts: u64,
    /// Extra issue cycles from operand register-bank conflicts (`register_banks`).
    pub register_bank_conflicts: u64,
    pub l1_accesses: u64,
    pub l1_hits: u64,
    pub l2_accesses: u64,
    pub l2_hits: u64,
    pub dram_reads: u64,
    pub dram_writes: u64,
    pub dram_bytes: u64,
    pub stall_memory: u64,
    pub stall_dependency: u64,
    pub stall_barrier: u64,
    pub stall_idle: u64,
    /// Scheduler cycles spent issuing (a warp instruction occupies its scheduler for
    /// warp_size / lanes cycles).
    pub issue_cycles: u64,
    /// DAC: scheduler cycles stalled because the chosen warps' `deq` had no entry
    /// (or no data) yet.
    pub stall_queue: u64,
    /// DAC: instructions of the affine warps (not in `warp_insts`, which counts the
    /// non-affine warps), summed over SMs and batches.
    pub affine_warp_insts: u64,
    /// DAC: non-affine warp instructions dequeuing: loads through `[deq.data]` (the
    /// decoupled loads), accesses through `[deq.addr]`, and `deq.pred`.
    pub deq_data_insts: u64,
    /// DAC: `[deq.data]` loads with at least one executing lane (the decoupled loads
    /// that access memory; `deq_data_insts` also counts all-off drains).
    pub decoupled_load_insts: u64,
    pub deq_addr_insts: u64,
    pub deq_pred_insts: u64,
    /// DAC: `enq` entries the affine warps queued, and the cycles an `enq` waited
    /// for room (back-pressure).
    pub enq_entries: u64,
    pub enq_stall_cycles: u64,
    /// DAC: mean and largest occupancy of the ATQ and of a per-warp address and
    /// predicate queue (entries, sampled every cycle of the expansion units).
    pub atq_mean_occupancy: f64,
    pub pwaq_mean_occupancy: f64,
    pub pwpq_mean_occupancy: f64,
    pub pwaq_max_occupancy: u64,
    /// DAC: expansion-unit cycles held up by full per-warp queues or by barriers.
    pub expand_stall_queue_full: u64,
    pub expand_stall_barrier: u64,
    /// DAC: AEU cycles a finished `enq.data` record waited for the AEU's request
    /// buffer (its previous requests waiting for L1 miss registers), cycles the
    /// buffer's oldest request waited for a miss register, and runs of the affine
    /// warp (batches).
    pub expand_stall_l1: u64,
    pub early_mshr_wait: u64,
    pub dac_batches: u64,
    /// DAC: early requests not issued because the L1 could not lock their line (the
    /// warp's `deq.data` then loads the line itself).
    pub prefetch_dropped: u64,
    /// DAC: early requests of `enq.data` (lines), lines used by `deq.data`, and how
    /// early they arrived before their use (lead = use − arrival, cycles).
    pub early_requests: u64,
    pub prefetched_lines_used: u64,
    pub prefetch_lead_sum: u64,
    pub prefetch_lead_max: u64,
    /// DAC: early lines the lock table could not protect.
    pub prefetch_unprotected: u64,
    /// The events the energy model prices, and their energy ([`super::energy`]).
    pub events: Events,
    pub energy: Energy,
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

impl Stats {
    pub fn add_stall(&mut self, s: Stall, n: u64) {
        match s {
            Stall::Memory => self.stall_memory += n,
            Stall::Dependency => self.stall_dependency += n,
            Stall::Barrier => self.stall_barrier += n,
            Stall::Queue => self.stall_queue += n,
            Stall::Idle => self.stall_idle += n,
        }
    }

    /// Thread instructions per cycle (GPGPU-Sim's IPC).
    pub fn ipc(&self) -> f64 {
        ratio(self.thread_insts, self.cycles)
    }

    /// Warp instructions of the vector datapath (all but the uniform ones).
    pub fn vector_insts(&self) -> u64 {
        self.warp_insts - self.uniform_insts
    }

    /// Lane utilization of the vector datapath: active lanes per vector warp
    /// instruction over `warp_size` (0 when none ran).
    pub fn lane_utilization(&self, warp_size: u32) -> f64 {
        ratio(
            self.vector_thread_insts,
            self.vector_insts() * u64::from(warp_size),
        )
    }

    /// DAC: mean cycles a prefetched line waited in L1 before its `deq.data`.
    pub fn prefetch_mean_lead(&self) -> f64 {
        ratio(self.prefetch_lead_sum, self.prefetched_lines_used)
    }

    pub fn l1_hit_rate(&self) -> f64 {
        ratio(self.l1_hits, self.l1_accesses)
    }

    pub fn l2_hit_rate(&self) -> f64 {
        ratio(self.l2_hits, self.l2_accesses)
    }

    /// The statistics of a functional run.
    pub fn functional_pairs(&self) -> Vec<(String, StatValue)> {
        use StatValue::U64;
        vec![
            ("warp_instructions".into(), U64(self.warp_insts)),
            ("thread_instructions".into(), U64(self.thread_insts)),
            ("blocks".into(), U64(self.blocks)),
        ]
    }

    /// Every statistic of a timing run.
    pub fn pairs(&self) -> Vec<(String, StatValue)> {
        use StatValue::{F64, U64};
        let mut v = self.functional_pairs();
        let more: Vec<(&str, StatValue)> = vec![
            ("cycles", U64(self.cycles)),
            ("ipc", F64(self.ipc())),
            ("warp_ipc", F64(ratio(self.warp_insts, self.cycles))),
            ("uniform_instructions", U64(self.uniform_insts)),
            ("vector_instructions", U64(self.vector_insts())),
            ("vector_thread_instructions", U64(self.vector_thread_insts)),
            ("lane_utilization", F64(self.lane_utilization(32))),
            ("theoretical_occupancy", F64(self.theoretical_occupancy)),
            ("achieved_occupancy", F64(self.achieved_occupancy)),
            ("global_load_instructions", U64(self.global_load_insts)),
            ("global_load_lanes", U64(self.global_load_lanes)),
            ("global_store_instructions", U64(self.global_store_insts)),
            ("global_atomic_instructions", U64(self.global_atomic_insts)),
            (
                "global_load_transactions",
                U64(self.global_load_transactions),
            ),
            (
                "global_store_transactions",
                U64(self.global_store_transactions),
            ),
            (
                "global_atomic_transactions",
                U64(self.global_atomic_transactions),
            ),
            ("local_transactions", U64(self.local_transactions)),
            ("local_load_instructions", U64(self.local_load_insts)),
            ("local_store_instructions", U64(self.local_store_insts)),
            ("shared_instructions", U64(self.shared_insts)),
            ("shared_bank_conflicts", U64(self.shared_bank_conflicts)),
            ("register_bank_conflicts", U64(self.register_bank_conflicts)),
            ("l1_accesses", U64(self.l1_accesses)),
            ("l1_hits", U64(self.l1_hits)),
            ("l1_hit_rate", F64(self.l1_hit_rate())),
            ("l2_accesses", U64(self.l2_accesses)),
            ("l2_hits", U64(self.l2_hits)),
            ("l2_hit_rate", F64(self.l2_hit_rate())),
            ("dram_reads", U64(self.dram_reads)),
            ("dram_writes", U64(self.dram_writes)),
            ("dram_bytes", U64(self.dram_bytes)),
            ("issue_cycles", U64(self.issue_cycles)),
            ("stall_memory", U64(self.stall_memory)),
            ("stall_dependency", U64(self.stall_dependency)),
            ("stall_barrier", U64(self.stall_barrier)),
            ("stall_idle", U64(self.stall_idle)),
            ("stall_queue", U64(self.stall_queue)),
        ];
        v.extend(more.into_iter().map(|(n, x)| (n.to_string(), x)));
        v.extend(
            self.events
                .pairs()
                .into_iter()
                .map(|(n, x)| (n.to_string(), U64(x))),
        );
        v.extend(
            self.energy
                .pairs()
                .into_iter()
                .map(|(n, x)| (n.to_string(), StatValue::F64(x))),
        );
        if self.affine_warp_insts + self.deq_data_insts + self.deq_addr_insts + self.deq_pred_insts
            == 0
        {
            return v;
        }
        let loads = self.global_load_insts + self.local_load_insts;
        let more: Vec<(&str, StatValue)> = vec![
            ("affine_warp_instructions", U64(self.affine_warp_insts)),
            ("nonaffine_warp_instructions", U64(self.warp_insts)),
            (
                "total_warp_instructions",
                U64(self.warp_insts + self.affine_warp_insts),
            ),
            ("deq_data_instructions", U64(self.deq_data_insts)),
            ("deq_addr_instructions", U64(self.deq_addr_insts)),
            ("deq_pred_instructions", U64(self.deq_pred_insts)),
            (
                "decoupled_load_instructions",
                U64(self.decoupled_load_insts),
            ),
            (
                "loads_decoupled",
                F64(ratio(self.decoupled_load_insts, loads)),
            ),
            ("enq_entries", U64(self.enq_entries)),
            ("enq_stall_cycles", U64(self.enq_stall_cycles)),
            ("atq_mean_occupancy", F64(self.atq_mean_occupancy)),
            ("pwaq_mean_occupancy", F64(self.pwaq_mean_occupancy)),
            ("pwpq_mean_occupancy", F64(self.pwpq_mean_occupancy)),
            ("pwaq_max_occupancy", U64(self.pwaq_max_occupancy)),
            ("expand_stall_queue_full", U64(self.expand_stall_queue_full)),
            ("expand_stall_barrier", U64(self.expand_stall_barrier)),
            ("expand_stall_l1", U64(self.expand_stall_l1)),
            ("early_mshr_wait", U64(self.early_mshr_wait)),
            ("dac_batches", U64(self.dac_batches)),
            ("prefetch_dropped", U64(self.prefetch_dropped)),
            ("early_requests", U64(self.early_requests)),
            ("prefetched_lines_used", U64(self.prefetched_lines_used)),
            ("prefetch_mean_lead", F64(self.prefetch_mean_lead())),
            ("prefetch_lead_max", U64(self.prefetch_lead_max)),
            ("prefetch_unprotected", U64(self.prefetch_unprotected)),
        ];
        v.extend(more.into_iter().map(|(n, x)| (n.to_string(), x)));
        v
    }
}
