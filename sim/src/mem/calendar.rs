//! A resource's reservations over time: the busy intervals of an L2 bank's input or a
//! DRAM channel's bus, so that a request takes the earliest free interval at or after
//! its own arrival, whatever order the requests are made in.
//!
//! A request made late in the simulation's loop can still arrive early in simulated
//! time (a miss that waited for a miss register is made for a later cycle; the next SM
//! in the loop asks for the current one). A single "next free" time would queue the
//! early request behind the later one; the calendar lets it take the gap before.

use std::collections::VecDeque;

/// Busy intervals `[start, end)`, in order, disjoint and not touching (touching
/// ones merge). Requests come in roughly increasing time, so bookings happen near
/// the back and old ones leave from the front: a deque keeps both cheap.
#[derive(Clone, Debug)]
pub struct Calendar {
    busy: VecDeque<(u64, u64)>,
    /// Intervals ending this long before a request's arrival are forgotten: requests
    /// are made in roughly increasing time, so none arrives that much earlier.
    horizon: u64,
}

impl Calendar {
    /// A free resource whose requests arrive less than `horizon` time units before
    /// the latest one made.
    pub fn new(horizon: u64) -> Calendar {
        Calendar {
            busy: VecDeque::new(),
            horizon,
        }
    }

    /// Reserves `len` units at the earliest time at or after `at` when the resource is
    /// free for that long; returns the start.
    pub fn reserve(&mut self, at: u64, len: u64) -> u64 {
        if len == 0 {
            return at;
        }
        let end = self.busy.back().map_or(0, |&(_, e)| e);
        if at >= end {
            // The common case, requests in time order: book at the back.
            match self.busy.back_mut() {
                Some(last) if last.1 == at => last.1 = at + len,
                _ => self.busy.push_back((at, at + len)),
            }
            self.forget_before(at.saturating_sub(self.horizon));
            return at;
        }
        // Ends are in order too: skip the intervals over before `at`, then every
        // one that leaves no gap of `len` before it.
        let mut i = self.busy.partition_point(|&(_, e)| e <= at);
        let mut start = at;
        while let Some(&(s, e)) = self.busy.get(i) {
            if s >= start + len {
                break;
            }
            start = start.max(e);
            i += 1;
        }
        self.insert(i, start, start + len);
        start
    }

    /// Inserts `[start, end)` at index `i`, where it fits between its neighbours,
    /// merging it with those it touches.
    fn insert(&mut self, i: usize, start: u64, end: u64) {
        let joins_prev = i > 0 && self.busy[i - 1].1 == start;
        let joins_next = self.busy.get(i).is_some_and(|&(s, _)| s == end);
        match (joins_prev, joins_next) {
            (true, true) => {
                self.busy[i - 1].1 = self.busy[i].1;
                self.busy.remove(i);
            }
            (true, false) => self.busy[i - 1].1 = end,
            (false, true) => self.busy[i].0 = start,
            (false, false) => self.busy.insert(i, (start, end)),
        }
    }

    fn forget_before(&mut self, t: u64) {
        while self.busy.front().is_some_and(|&(_, e)| e < t) {
            self.busy.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request made after a later-booked one, for an earlier time, goes first.
    #[test]
    fn an_earlier_request_takes_the_gap_before_a_later_booking() {
        let mut c = Calendar::new(1000);
        assert_eq!(c.reserve(100, 2), 100);
        assert_eq!(c.reserve(10, 2), 10);
        assert_eq!(c.reserve(11, 2), 12);
        // The gap 14..100 is free; 99 does not fit before 100 and goes after it.
        assert_eq!(c.reserve(99, 2), 102);
        assert_eq!(c.reserve(97, 3), 97, "97..100 fits exactly");
    }

    /// Back-to-back requests queue as with a single next-free time.
    #[test]
    fn a_stream_in_order_queues_behind_itself() {
        let mut c = Calendar::new(1000);
        let starts: Vec<u64> = (0..5).map(|_| c.reserve(7, 3)).collect();
        assert_eq!(starts, [7, 10, 13, 16, 19]);
        assert_eq!(c.busy.len(), 1, "touching bookings merge: {:?}", c.busy);
    }

    /// A gap too short for the request is skipped, however many bookings follow.
    #[test]
    fn short_gaps_are_skipped() {
        let mut c = Calendar::new(1000);
        for t in [10, 13, 16] {
            assert_eq!(c.reserve(t, 2), t);
        }
        assert_eq!(c.reserve(9, 2), 18, "gaps of 1 at 12 and 15 are too short");
        assert_eq!(c.reserve(0, 9), 0);
        assert_eq!(c.reserve(0, 1), 9);
    }

    /// Bookings older than the horizon are forgotten.
    #[test]
    fn old_bookings_are_forgotten() {
        let mut c = Calendar::new(100);
        c.reserve(0, 10);
        c.reserve(50, 10);
        c.reserve(500, 1);
        assert_eq!(c.busy.len(), 1, "{:?}", c.busy);
        assert_eq!(c.busy.front(), Some(&(500, 501)));
    }
}
