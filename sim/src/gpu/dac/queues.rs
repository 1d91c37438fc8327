//! Bounded hardware queues with back-pressure and occupancy statistics: the Affine
//! Tuple Queue (one per SM) and the per-warp address and predicate queues (PWAQ,
//! PWPQ) of paper §4.1 (Figure 9 ③⑤).
//!
//! Back-pressure is explicit: [`BoundedQueue::try_push`] hands the value back when
//! the queue is full, and the producer (the affine warp's `enq` at the scoreboard,
//! or an expansion unit) must stall and retry. A consumer finding the queue empty
//! (a `deq` before its entry arrived) calls [`BoundedQueue::pop`], which counts the
//! miss. [`BoundedQueue::sample`], called once per cycle, records occupancy.

use std::collections::VecDeque;

/// What a queue saw over a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct QueueStats {
    pub pushes: u64,
    pub pops: u64,
    /// Pushes refused because the queue was full: with one attempt per cycle, the
    /// producer's back-pressure stall cycles.
    pub full_refusals: u64,
    /// Pops of an empty queue: with one attempt per cycle, the consumer's stall
    /// cycles waiting for an entry.
    pub empty_pops: u64,
    /// Cycles sampled, and the sum of the occupancies seen.
    pub samples: u64,
    pub occupancy_sum: u64,
    /// Sampled cycles on which the queue was full, and empty.
    pub full_samples: u64,
    pub empty_samples: u64,
    pub max_occupancy: u32,
}

impl QueueStats {
    /// Mean sampled occupancy in entries (0 without samples).
    pub fn mean_occupancy(&self) -> f64 {
        if self.samples == 0 {
            0.0
        } else {
            self.occupancy_sum as f64 / self.samples as f64
        }
    }

    /// Adds another queue's statistics (totals over the per-warp queues).
    pub fn merge(&mut self, o: &QueueStats) {
        self.pushes += o.pushes;
        self.pops += o.pops;
        self.full_refusals += o.full_refusals;
        self.empty_pops += o.empty_pops;
        self.samples += o.samples;
        self.occupancy_sum += o.occupancy_sum;
        self.full_samples += o.full_samples;
        self.empty_samples += o.empty_samples;
        self.max_occupancy = self.max_occupancy.max(o.max_occupancy);
    }
}

/// A FIFO of at most `capacity` entries.
#[derive(Clone, Debug)]
pub struct BoundedQueue<T> {
    items: VecDeque<T>,
    capacity: usize,
    stats: QueueStats,
}

impl<T> BoundedQueue<T> {
    /// A queue of `capacity` entries (a 0-entry queue refuses every push).
    pub fn new(capacity: usize) -> BoundedQueue<T> {
        BoundedQueue {
            items: VecDeque::with_capacity(capacity),
            capacity,
            stats: QueueStats::default(),
        }
    }

    /// Appends `v`, or hands it back when the queue is full.
    pub fn try_push(&mut self, v: T) -> Result<(), T> {
        if self.is_full() {
            self.stats.full_refusals += 1;
            return Err(v);
        }
        self.items.push_back(v);
        self.stats.pushes += 1;
        self.stats.max_occupancy = self.stats.max_occupancy.max(self.items.len() as u32);
        Ok(())
    }

    /// Removes the oldest entry; `None` (counted) when empty.
    pub fn pop(&mut self) -> Option<T> {
        let v = self.items.pop_front();
        match v {
            Some(_) => self.stats.pops += 1,
            None => self.stats.empty_pops += 1,
        }
        v
    }

    /// The oldest entry.
    pub fn front(&self) -> Option<&T> {
        self.items.front()
    }

    /// The `i`-th oldest entry (0: the front).
    pub fn get(&self, i: usize) -> Option<&T> {
        self.items.get(i)
    }

    pub fn front_mut(&mut self) -> Option<&mut T> {
        self.items.front_mut()
    }

    /// Records this cycle's occupancy.
    pub fn sample(&mut self) {
        let n = self.items.len() as u64;
        self.stats.samples += 1;
        self.stats.occupancy_sum += n;
        self.stats.full_samples += u64::from(self.is_full());
        self.stats.empty_samples += u64::from(n == 0);
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn is_full(&self) -> bool {
        self.items.len() >= self.capacity
    }

    /// Entries that can still be pushed.
    pub fn free(&self) -> usize {
        self.capacity.saturating_sub(self.items.len())
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub fn stats(&self) -> &QueueStats {
        &self.stats
    }

    /// Empties the queue (a new batch of CTAs), keeping the statistics.
    pub fn clear(&mut self) {
        self.items.clear();
    }

    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.items.iter()
    }
}

/// One queue per non-affine warp slot of the SM (PWAQ or PWPQ).
#[derive(Clone, Debug)]
pub struct PerWarpQueues<T> {
    queues: Vec<BoundedQueue<T>>,
}

impl<T> PerWarpQueues<T> {
    pub fn new(warps: usize, capacity: usize) -> PerWarpQueues<T> {
        PerWarpQueues {
            queues: (0..warps).map(|_| BoundedQueue::new(capacity)).collect(),
        }
    }

    /// Warp slot `w`'s queue; `None` for a slot the SM does not have.
    pub fn get(&self, w: usize) -> Option<&BoundedQueue<T>> {
        self.queues.get(w)
    }

    pub fn get_mut(&mut self, w: usize) -> Option<&mut BoundedQueue<T>> {
        self.queues.get_mut(w)
    }

    /// True when any of `warps` has a full queue (§4.1 ⑨: the affine warp's `enq`
    /// may not issue then). Slots out of range are ignored.
    pub fn any_full(&self, mut warps: impl Iterator<Item = usize>) -> bool {
        warps.any(|w| self.queues.get(w).is_some_and(|q| q.is_full()))
    }

    /// Samples every queue's occupancy.
    pub fn sample(&mut self) {
        self.queues.iter_mut().for_each(BoundedQueue::sample);
    }

    /// The statistics summed over all warps' queues.
    pub fn total_stats(&self) -> QueueStats {
        let mut s = QueueStats::default();
        self.queues.iter().for_each(|q| s.merge(q.stats()));
        s
    }

    pub fn len(&self) -> usize {
        self.queues.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queues.is_empty()
    }

    pub fn clear(&mut self) {
        self.queues.iter_mut().for_each(BoundedQueue::clear);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_fails_when_full_and_hands_the_value_back() {
        let mut q = BoundedQueue::new(2);
        assert_eq!(q.try_push('a'), Ok(()));
        assert_eq!(q.try_push('b'), Ok(()));
        assert!(q.is_full());
        assert_eq!(q.try_push('c'), Err('c'));
        assert_eq!(q.try_push('c'), Err('c'));
        assert_eq!(q.pop(), Some('a'));
        assert_eq!(q.try_push('c'), Ok(()));
        assert_eq!((q.pop(), q.pop(), q.pop()), (Some('b'), Some('c'), None));
        let s = q.stats();
        assert_eq!(
            (s.pushes, s.pops, s.full_refusals, s.empty_pops),
            (3, 3, 2, 1)
        );
        assert_eq!(s.max_occupancy, 2);
        assert!(BoundedQueue::new(0).try_push(1).is_err());
    }

    #[test]
    fn producer_consumer_stalls_are_counted_per_cycle() {
        // A producer pushing every cycle into a 3-entry queue drained every other
        // cycle: the queue fills, then the producer stalls one cycle in two.
        let mut q = BoundedQueue::new(3);
        let (mut produced, mut stalls) = (0u32, 0u32);
        for cycle in 0..20 {
            match q.try_push(produced) {
                Ok(()) => produced += 1,
                Err(v) => {
                    assert_eq!(v, produced);
                    stalls += 1;
                }
            }
            if cycle % 2 == 1 {
                q.pop();
            }
            q.sample();
        }
        let s = q.stats();
        assert_eq!(u64::from(stalls), s.full_refusals);
        assert_eq!(produced + stalls, 20);
        // Pushes on cycles 0-4 (one pop in between), then one per drained slot.
        assert_eq!((produced, stalls), (12, 8));
        assert_eq!(s.samples, 20);
        assert!(s.mean_occupancy() > 2.0 && s.full_samples > 0 && s.empty_samples == 0);
        // FIFO order survives the back-pressure.
        let rest: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(rest, [10, 11]);
    }

    #[test]
    fn per_warp_queues_report_any_full_and_totals() {
        let mut qs = PerWarpQueues::new(4, 1);
        assert!(!qs.any_full(0..4));
        qs.get_mut(2).unwrap().try_push(7).unwrap();
        assert!(qs.any_full(0..4));
        assert!(!qs.any_full([0, 1, 3, 9].into_iter()));
        assert!(qs.get_mut(2).unwrap().try_push(8).is_err());
        assert!(qs.get(4).is_none());
        qs.sample();
        let t = qs.total_stats();
        assert_eq!(
            (t.pushes, t.full_refusals, t.samples, t.occupancy_sum),
            (1, 1, 4, 1)
        );
    }
}
