//! Counters of one SM in a timing run, for per-SM breakdowns: the share of the
//! machine-wide [`Stats`] that the SM's schedulers and L1 account for.
//!
//! The timing model counts into the machine-wide statistics as it always has; an SM
//! takes the difference of those counters over each of its own cycles
//! ([`SmStats::add_since`]), so the per-SM figures add up to the totals by
//! construction and no counting site needs to know which SM it is on.

use super::stats::{StatValue, Stats};

/// One SM's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SmStats {
    /// Blocks dispatched to the SM.
    pub blocks: u64,
    pub warp_insts: u64,
    pub thread_insts: u64,
    pub issue_cycles: u64,
    pub stall_memory: u64,
    pub stall_dependency: u64,
    pub stall_barrier: u64,
    pub stall_queue: u64,
    pub stall_idle: u64,
    /// Resident warps summed over cycles (for achieved occupancy).
    pub warp_cycles: u64,
    pub l1_accesses: u64,
    pub l1_hits: u64,
}

/// The machine-wide counters an SM's cycle can change, as a snapshot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Snapshot([u64; 8]);

impl Snapshot {
    pub fn of(s: &Stats) -> Snapshot {
        Snapshot([
            s.warp_insts,
            s.thread_insts,
            s.issue_cycles,
            s.stall_memory,
            s.stall_dependency,
            s.stall_barrier,
            s.stall_queue,
            s.stall_idle,
        ])
    }
}

impl SmStats {
    /// Adds what the machine-wide counters gained since `before`.
    pub fn add_since(&mut self, before: Snapshot, now: &Stats) {
        let after = Snapshot::of(now);
        let d: [u64; 8] = std::array::from_fn(|i| after.0[i].saturating_sub(before.0[i]));
        self.warp_insts += d[0];
        self.thread_insts += d[1];
        self.issue_cycles += d[2];
        self.stall_memory += d[3];
        self.stall_dependency += d[4];
        self.stall_barrier += d[5];
        self.stall_queue += d[6];
        self.stall_idle += d[7];
    }

    /// The SM's statistics under the names of the totals ([`Stats::pairs`]), over a
    /// run of `cycles` on an SM holding at most `max_warps` warps.
    pub fn pairs(&self, cycles: u64, max_warps: u32) -> Vec<(String, StatValue)> {
        use StatValue::{F64, U64};
        let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        let v: Vec<(&str, StatValue)> = vec![
            ("blocks", U64(self.blocks)),
            ("warp_instructions", U64(self.warp_insts)),
            ("thread_instructions", U64(self.thread_insts)),
            ("ipc", F64(ratio(self.thread_insts, cycles))),
            ("issue_cycles", U64(self.issue_cycles)),
            (
                "achieved_occupancy",
                F64(ratio(self.warp_cycles, cycles * u64::from(max_warps))),
            ),
            ("l1_hit_rate", F64(ratio(self.l1_hits, self.l1_accesses))),
            ("stall_memory", U64(self.stall_memory)),
            ("stall_dependency", U64(self.stall_dependency)),
            ("stall_barrier", U64(self.stall_barrier)),
            ("stall_queue", U64(self.stall_queue)),
            ("stall_idle", U64(self.stall_idle)),
        ];
        v.into_iter().map(|(k, x)| (k.to_string(), x)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_sm_counts_what_the_totals_gained_over_its_cycles() {
        let mut total = Stats::default();
        let mut sm = SmStats::default();
        total.warp_insts = 10; // another SM's work, before this SM's cycle
        let before = Snapshot::of(&total);
        total.warp_insts += 3;
        total.thread_insts += 96;
        total.stall_memory += 2;
        sm.add_since(before, &total);
        assert_eq!(
            (sm.warp_insts, sm.thread_insts, sm.stall_memory),
            (3, 96, 2)
        );
        let pairs = sm.pairs(4, 48);
        assert!(pairs.contains(&("ipc".to_string(), StatValue::F64(24.0))));
    }
}
