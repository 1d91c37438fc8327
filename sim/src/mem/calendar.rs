//! A resource's reservations over time: the busy intervals of an L2 bank's input or a
//! DRAM channel's bus, so that a request takes the earliest free interval at or after
//! its own arrival, whatever order the requests are made in.
//!
//! A request made late in the simulation's loop can still arrive early in simulated
//! time (a miss that waited for a miss register is made for a later cycle; the next SM
//! in the loop asks for the current one). A single "next free" time would queue the
//! early request behind the later one; the calendar lets it take the gap before.

use std::collections::BTreeMap;

/// Busy intervals `[start, end)`, disjoint and not touching (touching ones merge).
#[derive(Clone, Debug)]
pub struct Calendar {
    busy: BTreeMap<u64, u64>,
    /// Intervals ending this long before a request's arrival are forgotten: requests
    /// are made in roughly increasing time, so none arrives that much earlier.
    horizon: u64,
}

impl Calendar {
    /// A free resource whose requests arrive less than `horizon` time units before
    /// the latest one made.
    pub fn new(horizon: u64) -> Calendar {
        Calendar {
            busy: BTreeMap::new(),
            horizon,
        }
    }

    /// Reserves `len` units at the earliest time at or after `at` when the resource is
    /// free for that long; returns the start.
    pub fn reserve(&mut self, at: u64, len: u64) -> u64 {
        if len == 0 {
            return at;
        }
        let mut start = at;
        if let Some((_, &end)) = self.busy.range(..=at).next_back() {
            start = start.max(end);
        }
        for (&s, &e) in self.busy.range(start..) {
            if s >= start + len {
                break;
            }
            start = e;
        }
        self.insert(start, start + len);
        self.forget_before(at.saturating_sub(self.horizon));
        start
    }

    fn insert(&mut self, mut start: u64, mut end: u64) {
        if let Some((&s, &e)) = self.busy.range(..=start).next_back() {
            if e >= start {
                start = s;
                end = end.max(e);
                self.busy.remove(&s);
            }
        }
        while let Some((&s, &e)) = self.busy.range(start..=end).next() {
            end = end.max(e);
            self.busy.remove(&s);
        }
        self.busy.insert(start, end);
    }

    fn forget_before(&mut self, t: u64) {
        while let Some((&s, &e)) = self.busy.first_key_value() {
            if e >= t {
                break;
            }
            self.busy.remove(&s);
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
        assert_eq!(c.busy.first_key_value(), Some((&500, &501)));
    }
}
