//! The life of `enq.data`'s early requests, from the AEU's issue to the non-affine
//! warp's `deq.data` (paper §4.1 ⑦⑧, §4.2): which lines of a warp's record have
//! arrived (a `deq.data` may not issue before, §4.1 ⑨), the L1 locks that protect
//! them in between, and prefetch timeliness: how many cycles each line waited in L1
//! before its use (issue 7's statistic; a line that arrives after the warp first
//! wanted it counts as a wait).
//!
//! The memory model owns the L1 and its [`LockTable`]. The AEU locks a line when it
//! issues the request (§4.2: "the AEU locks cache lines upon issuing memory
//! requests"; the line's way is allocated at issue, and the fill lands in it): the
//! caller passes the way it locked to [`PrefetchTracker::issue`], or `None` when the
//! table refused (the request is then unprotected: its line may be evicted before
//! use, which costs the warp a miss but cannot deadlock). Fills are reported with
//! [`PrefetchTracker::arrive`]; the warp's access releases the locks
//! ([`PrefetchTracker::consume`]).

use super::engine::EarlyRequest;
use super::locks::LockTable;
use std::collections::HashMap;

/// Upper bounds (cycles) of the lead-time histogram buckets; the last bucket is open.
pub const LEAD_BUCKETS: [u64; 5] = [0, 16, 64, 256, 1024];

/// Prefetch timeliness and lock use over a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PrefetchStats {
    /// Early requests issued, and filled.
    pub requests: u64,
    pub arrivals: u64,
    /// Requests whose lock the table refused (their lines may be evicted before use).
    pub unprotected: u64,
    /// Records consumed by `deq.data`, and their lines.
    pub records: u64,
    pub lines: u64,
    /// Sum and maximum over consumed lines of `use cycle − arrival cycle`.
    pub lead_sum: u64,
    pub lead_max: u64,
    /// Lines by lead time: `[0, 16)`, `[16, 64)`, `[64, 256)`, `[256, 1024)`,
    /// `[1024, ∞)` cycles (a lead of 0: the data arrived just in time or late).
    pub lead_histogram: [u64; LEAD_BUCKETS.len()],
    /// Cycles a `deq.data` could not issue because its data had not arrived.
    pub wait_cycles: u64,
}

impl PrefetchStats {
    /// Mean cycles a consumed line waited in L1 (0 without lines).
    pub fn mean_lead(&self) -> f64 {
        if self.lines == 0 {
            0.0
        } else {
            self.lead_sum as f64 / self.lines as f64
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct LineState {
    line: u64,
    arrived: Option<u64>,
    lock: Option<(u32, u32)>,
}

/// Outstanding early requests by (warp slot, ATQ sequence number).
#[derive(Clone, Debug, Default)]
pub struct PrefetchTracker {
    records: HashMap<(usize, u64), Vec<LineState>>,
    waiting: HashMap<u64, Vec<(usize, u64)>>,
    stats: PrefetchStats,
}

impl PrefetchTracker {
    pub fn new() -> PrefetchTracker {
        PrefetchTracker::default()
    }

    /// The AEU issued `r` (see [`super::DacSm::cycle`]), holding the lock `lock`
    /// (set, way) on its line, or none when the table refused it.
    pub fn issue(&mut self, r: &EarlyRequest, lock: Option<(u32, u32)>) {
        self.records
            .entry((r.warp_slot, r.seq))
            .or_default()
            .push(LineState {
                line: r.line,
                arrived: None,
                lock,
            });
        self.waiting
            .entry(r.line)
            .or_default()
            .push((r.warp_slot, r.seq));
        self.stats.requests += 1;
        self.stats.unprotected += u64::from(lock.is_none());
    }

    /// `line` was filled into L1 at `cycle`: every request waiting for it arrives.
    /// Returns the requests served.
    pub fn arrive(&mut self, line: u64, cycle: u64) -> usize {
        let Some(keys) = self.waiting.remove(&line) else {
            return 0;
        };
        let mut served = 0;
        for key in keys {
            let Some(rec) = self.records.get_mut(&key) else {
                continue;
            };
            let Some(l) = rec
                .iter_mut()
                .find(|l| l.line == line && l.arrived.is_none())
            else {
                continue;
            };
            l.arrived = Some(cycle);
            self.stats.arrivals += 1;
            served += 1;
        }
        served
    }

    /// True when every early request of warp `slot`'s record `seq` has arrived (a
    /// record without early requests is ready).
    pub fn is_ready(&self, slot: usize, seq: u64) -> bool {
        self.records
            .get(&(slot, seq))
            .is_none_or(|r| r.iter().all(|l| l.arrived.is_some()))
    }

    /// A `deq.data` of warp `slot` could not issue this cycle for want of data.
    pub fn note_wait(&mut self) {
        self.stats.wait_cycles += 1;
    }

    /// Warp `slot`'s `deq.data` used record `seq` at cycle `now`: releases its
    /// locks, appending to `freed` each (set, way) whose last lock it released (the
    /// cache may replace it again), and records each line's lead time. Returns the
    /// lines consumed (0 for an unknown record).
    pub fn consume(
        &mut self,
        slot: usize,
        seq: u64,
        now: u64,
        locks: &mut LockTable,
        freed: &mut Vec<(u32, u32)>,
    ) -> usize {
        let Some(lines) = self.records.remove(&(slot, seq)) else {
            return 0;
        };
        for l in &lines {
            if let Some((set, way)) = l.lock {
                if locks.unlock(set, way) == Ok(0) {
                    freed.push((set, way));
                }
            }
            if l.arrived.is_none() {
                self.unwait(l.line, slot, seq);
            }
            let lead = l.arrived.map_or(0, |a| now.saturating_sub(a));
            let s = &mut self.stats;
            s.lead_sum += lead;
            s.lead_max = s.lead_max.max(lead);
            let bucket = LEAD_BUCKETS.iter().rposition(|&b| lead >= b).unwrap_or(0);
            s.lead_histogram[bucket] += 1;
        }
        self.stats.records += 1;
        self.stats.lines += lines.len() as u64;
        lines.len()
    }

    fn unwait(&mut self, line: u64, slot: usize, seq: u64) {
        if let Some(v) = self.waiting.get_mut(&line) {
            if let Some(i) = v.iter().position(|&k| k == (slot, seq)) {
                v.swap_remove(i);
            }
            if v.is_empty() {
                self.waiting.remove(&line);
            }
        }
    }

    /// Records with early requests not yet consumed.
    pub fn outstanding(&self) -> usize {
        self.records.len()
    }

    pub fn stats(&self) -> &PrefetchStats {
        &self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(warp_slot: usize, seq: u64, line: u64) -> EarlyRequest {
        EarlyRequest {
            warp_slot,
            line,
            seq,
            cycle: 0,
        }
    }

    /// Locks as the caller takes them at issue.
    fn issue_locked(
        t: &mut PrefetchTracker,
        locks: &mut LockTable,
        r: EarlyRequest,
        sw: (u32, u32),
    ) {
        let lock = locks.lock(sw.0, sw.1).ok().map(|_| sw);
        t.issue(&r, lock);
    }

    #[test]
    fn records_become_ready_when_all_lines_arrive_and_unlock_on_use() {
        let mut locks = LockTable::new(4, 4, 15).unwrap();
        let mut t = PrefetchTracker::new();
        let mut freed = Vec::new();
        // Warp 0's record 0 has two lines; warp 1's record 0 shares the second.
        issue_locked(&mut t, &mut locks, req(0, 0, 0x1000), (0, 0));
        issue_locked(&mut t, &mut locks, req(0, 0, 0x1080), (1, 2));
        issue_locked(&mut t, &mut locks, req(1, 0, 0x1080), (1, 2));
        assert_eq!(locks.count(1, 2), 2, "one lock per request, taken at issue");
        assert!(!t.is_ready(0, 0) && !t.is_ready(1, 0));
        assert!(t.is_ready(2, 0), "no early requests: nothing to wait for");
        assert_eq!(t.arrive(0x1080, 100), 2);
        assert!(t.is_ready(1, 0) && !t.is_ready(0, 0));
        assert_eq!(t.arrive(0x1000, 120), 1);
        assert_eq!(t.arrive(0x5000, 120), 0, "nobody waits");
        assert!(t.is_ready(0, 0));
        assert_eq!(t.consume(1, 0, 110, &mut locks, &mut freed), 1);
        assert_eq!(locks.count(1, 2), 1);
        assert!(freed.is_empty(), "warp 0 still holds the shared line");
        assert_eq!(t.consume(0, 0, 400, &mut locks, &mut freed), 2);
        assert_eq!(locks.locked_lines(), 0);
        assert_eq!(freed, vec![(0, 0), (1, 2)]);
        assert_eq!(t.outstanding(), 0);
        let s = t.stats();
        assert_eq!((s.requests, s.arrivals, s.records, s.lines), (3, 3, 2, 3));
        // Leads 10, 280 and 300 cycles.
        assert_eq!((s.lead_sum, s.lead_max), (590, 300));
        assert_eq!(s.lead_histogram, [1, 0, 0, 2, 0]);
    }

    #[test]
    fn a_refused_lock_leaves_the_line_unprotected() {
        let mut locks = LockTable::new(1, 2, 15).unwrap();
        locks.lock(0, 0).unwrap();
        let mut t = PrefetchTracker::new();
        let mut freed = Vec::new();
        issue_locked(&mut t, &mut locks, req(0, 3, 0x80), (0, 1));
        assert_eq!(locks.count(0, 1), 0, "way 1 is the set's last unlocked way");
        assert_eq!(t.arrive(0x80, 5), 1);
        assert!(t.is_ready(0, 3));
        t.note_wait();
        assert_eq!(t.consume(0, 3, 5, &mut locks, &mut freed), 1);
        assert_eq!(locks.count(0, 0), 1, "another lock is untouched");
        assert!(freed.is_empty());
        let s = t.stats();
        assert_eq!(
            (s.unprotected, s.wait_cycles, s.lead_histogram[0]),
            (1, 1, 1)
        );
    }

    #[test]
    fn consuming_before_arrival_forgets_the_request() {
        let mut locks = LockTable::new(1, 4, 15).unwrap();
        let mut t = PrefetchTracker::new();
        let mut freed = Vec::new();
        issue_locked(&mut t, &mut locks, req(0, 0, 0x80), (0, 0));
        assert_eq!(t.consume(0, 0, 9, &mut locks, &mut freed), 1);
        assert_eq!(t.arrive(0x80, 20), 0);
        assert_eq!(locks.locked_lines(), 0);
        assert_eq!(freed, vec![(0, 0)]);
        assert_eq!(
            t.consume(0, 0, 30, &mut locks, &mut freed),
            0,
            "unknown record"
        );
    }
}
