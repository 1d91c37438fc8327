//! L1 lock counters for DAC's early memory requests (paper §4.2).
//!
//! `enq.data` makes the AEU request each line of every warp's record as soon as the
//! record exists, long before the warp's `deq.data`. So that such a line is not
//! evicted in between, the tag array gets a lock counter per line: the AEU
//! increments it when it issues the request (the line is locked in L1 once it
//! arrives from L2 or DRAM), and the non-affine warp's access decrements it. A way
//! with a non-zero counter is never chosen as a victim.
//!
//! Deadlock freedom: accesses that are not affine still need a victim in every set,
//! so at most N−1 ways of an N-way set may be locked ([`LockTable::lock`] refuses to
//! lock the last unlocked way, and [`LockTable::victim`] then always finds a way).
//! Counters are finite (`lock_counter_max`): a lock of a line whose counter is at
//! its maximum is refused rather than wrapped, since a wrapped counter would release
//! the line before its last use. A refused lock changes nothing; the caller
//! ([`super::PrefetchTracker::arrive`]) then leaves that request's line unprotected:
//! it may be evicted before its use, which costs the warp a miss but can never
//! deadlock, since nothing waits for a lock.

use std::fmt;

/// Why a lock or unlock was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockError {
    /// No such set or way.
    OutOfRange { set: u32, way: u32 },
    /// Locking this way would leave the set without an unlocked way.
    LastUnlockedWay { set: u32 },
    /// The way's counter is at its maximum.
    Saturated { set: u32, way: u32 },
    /// Unlock of a way that holds no lock.
    NotLocked { set: u32, way: u32 },
}

impl fmt::Display for LockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LockError::OutOfRange { set, way } => write!(f, "no set {set} way {way}"),
            LockError::LastUnlockedWay { set } => {
                write!(f, "set {set} would have no unlocked way left")
            }
            LockError::Saturated { set, way } => {
                write!(f, "the lock counter of set {set} way {way} is saturated")
            }
            LockError::NotLocked { set, way } => write!(f, "set {set} way {way} is not locked"),
        }
    }
}

impl std::error::Error for LockError {}

/// A lock table that cannot exist.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockTableError {
    /// Zero sets or ways, or a zero counter maximum.
    Empty,
    /// The cache size is not `sets × ways × line_size` with a power-of-two line.
    Shape {
        size: u32,
        line_size: u32,
        ways: u32,
    },
}

impl fmt::Display for LockTableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LockTableError::Empty => write!(f, "a lock table needs sets, ways and a counter"),
            LockTableError::Shape {
                size,
                line_size,
                ways,
            } => write!(
                f,
                "a {size}-byte cache is not whole sets of {ways} {line_size}-byte lines"
            ),
        }
    }
}

impl std::error::Error for LockTableError {}

/// What the lock counters saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LockStats {
    pub locks: u64,
    pub unlocks: u64,
    /// Locks refused because the way was its set's last unlocked one.
    pub refused_last_way: u64,
    pub refused_saturated: u64,
    /// The most ways locked at once in any one set (at most `ways − 1`).
    pub max_locked_ways: u32,
    /// The most lines locked at once in the whole cache.
    pub max_locked_lines: u32,
}

/// One lock counter per line (set × way) of an N-way cache.
#[derive(Clone, Debug)]
pub struct LockTable {
    sets: u32,
    ways: u32,
    max_count: u32,
    counters: Vec<u32>,
    locked_ways: Vec<u32>,
    locked_lines: u32,
    stats: LockStats,
}

impl LockTable {
    /// `sets × ways` counters counting up to `max_count` each.
    pub fn new(sets: u32, ways: u32, max_count: u32) -> Result<LockTable, LockTableError> {
        if sets == 0 || ways == 0 || max_count == 0 {
            return Err(LockTableError::Empty);
        }
        Ok(LockTable {
            sets,
            ways,
            max_count,
            counters: vec![0; sets as usize * ways as usize],
            locked_ways: vec![0; sets as usize],
            locked_lines: 0,
            stats: LockStats::default(),
        })
    }

    /// The table of a `size`-byte, `ways`-way cache of `line_size`-byte lines.
    pub fn for_cache(
        size: u32,
        line_size: u32,
        ways: u32,
        max_count: u32,
    ) -> Result<LockTable, LockTableError> {
        let shape = LockTableError::Shape {
            size,
            line_size,
            ways,
        };
        let set_bytes = line_size.checked_mul(ways).ok_or(shape)?;
        if !line_size.is_power_of_two() || set_bytes == 0 || !size.is_multiple_of(set_bytes) {
            return Err(shape);
        }
        LockTable::new(size / set_bytes, ways, max_count)
    }

    pub fn sets(&self) -> u32 {
        self.sets
    }

    pub fn ways(&self) -> u32 {
        self.ways
    }

    /// The set a byte address maps to (line index modulo the sets).
    pub fn set_of(&self, addr: u64, line_size: u32) -> u32 {
        ((addr / u64::from(line_size.max(1))) % u64::from(self.sets)) as u32
    }

    fn index(&self, set: u32, way: u32) -> Result<usize, LockError> {
        if set >= self.sets || way >= self.ways {
            return Err(LockError::OutOfRange { set, way });
        }
        Ok(set as usize * self.ways as usize + way as usize)
    }

    /// The way's lock count (0 when out of range).
    pub fn count(&self, set: u32, way: u32) -> u32 {
        self.index(set, way).map_or(0, |i| self.counters[i])
    }

    pub fn is_locked(&self, set: u32, way: u32) -> bool {
        self.count(set, way) > 0
    }

    /// Ways of `set` holding at least one lock.
    pub fn locked_ways(&self, set: u32) -> u32 {
        self.locked_ways.get(set as usize).copied().unwrap_or(0)
    }

    /// Lines locked in the whole cache.
    pub fn locked_lines(&self) -> u32 {
        self.locked_lines
    }

    /// Whether [`LockTable::lock`] would succeed.
    pub fn can_lock(&self, set: u32, way: u32) -> Result<(), LockError> {
        let c = self.counters[self.index(set, way)?];
        if c >= self.max_count {
            return Err(LockError::Saturated { set, way });
        }
        if c == 0 && self.locked_ways(set) + 1 >= self.ways {
            return Err(LockError::LastUnlockedWay { set });
        }
        Ok(())
    }

    /// Takes one more lock on the way (an early request issued for its line);
    /// returns the new count. Refused, with nothing changed, when the way is the
    /// set's last unlocked one or its counter is saturated.
    pub fn lock(&mut self, set: u32, way: u32) -> Result<u32, LockError> {
        if let Err(e) = self.can_lock(set, way) {
            match e {
                LockError::LastUnlockedWay { .. } => self.stats.refused_last_way += 1,
                LockError::Saturated { .. } => self.stats.refused_saturated += 1,
                _ => {}
            }
            return Err(e);
        }
        let i = self.index(set, way)?;
        if self.counters[i] == 0 {
            self.locked_ways[set as usize] += 1;
            self.locked_lines += 1;
            let s = &mut self.stats;
            s.max_locked_ways = s.max_locked_ways.max(self.locked_ways[set as usize]);
            s.max_locked_lines = s.max_locked_lines.max(self.locked_lines);
        }
        self.counters[i] += 1;
        self.stats.locks += 1;
        Ok(self.counters[i])
    }

    /// Releases one lock (the non-affine warp accessed the line); returns the new
    /// count.
    pub fn unlock(&mut self, set: u32, way: u32) -> Result<u32, LockError> {
        let i = self.index(set, way)?;
        if self.counters[i] == 0 {
            return Err(LockError::NotLocked { set, way });
        }
        self.counters[i] -= 1;
        if self.counters[i] == 0 {
            self.locked_ways[set as usize] -= 1;
            self.locked_lines -= 1;
        }
        self.stats.unlocks += 1;
        Ok(self.counters[i])
    }

    /// The replacement victim of `set`: the first way of `preference` (the cache's
    /// replacement order, e.g. LRU first) that is not locked. Never a locked way;
    /// with every way in `preference` there is always one, since at most N−1 ways
    /// are locked.
    pub fn victim(&self, set: u32, preference: impl IntoIterator<Item = u32>) -> Option<u32> {
        preference
            .into_iter()
            .find(|&w| w < self.ways && self.index(set, w).is_ok() && !self.is_locked(set, w))
    }

    pub fn stats(&self) -> &LockStats {
        &self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::dac::testutil::Rng;

    #[test]
    fn never_locks_the_last_way_of_a_set() {
        let mut t = LockTable::new(2, 4, 15).unwrap();
        for w in 0..3 {
            assert_eq!(t.lock(1, w), Ok(1));
        }
        assert_eq!(t.lock(1, 3), Err(LockError::LastUnlockedWay { set: 1 }));
        assert_eq!(t.victim(1, 0..4), Some(3));
        // More locks on a locked way do not lock another way.
        assert_eq!(t.lock(1, 0), Ok(2));
        assert_eq!(t.locked_ways(1), 3);
        // The other set is independent.
        assert_eq!(t.lock(0, 3), Ok(1));
        assert_eq!(t.unlock(1, 2), Ok(0));
        assert_eq!(t.victim(1, [3, 2, 1, 0]), Some(3));
        assert_eq!(t.victim(1, [0, 1, 2]), Some(2));
        assert_eq!(t.lock(1, 3), Ok(1));
        assert_eq!(
            t.victim(1, [0, 1, 3]),
            None,
            "the caller left out the free way 2"
        );
        let s = t.stats();
        assert_eq!((s.locks, s.unlocks, s.refused_last_way), (6, 1, 1));
        assert_eq!((s.max_locked_ways, s.max_locked_lines), (3, 4));
    }

    #[test]
    fn counters_saturate_and_unlocks_balance() {
        let mut t = LockTable::new(1, 2, 3).unwrap();
        assert_eq!(
            (t.lock(0, 0), t.lock(0, 0), t.lock(0, 0)),
            (Ok(1), Ok(2), Ok(3))
        );
        assert_eq!(t.lock(0, 0), Err(LockError::Saturated { set: 0, way: 0 }));
        assert_eq!(t.count(0, 0), 3, "a refused lock changes nothing");
        assert_eq!(t.unlock(0, 0), Ok(2));
        assert_eq!(t.lock(0, 0), Ok(3));
        for n in (0..3).rev() {
            assert_eq!(t.unlock(0, 0), Ok(n));
        }
        assert_eq!(t.unlock(0, 0), Err(LockError::NotLocked { set: 0, way: 0 }));
        assert_eq!((t.locked_lines(), t.stats().refused_saturated), (0, 1));
    }

    #[test]
    fn direct_mapped_caches_never_lock_and_bad_shapes_are_errors() {
        let mut t = LockTable::new(8, 1, 15).unwrap();
        assert_eq!(t.lock(5, 0), Err(LockError::LastUnlockedWay { set: 5 }));
        assert_eq!(t.lock(8, 0), Err(LockError::OutOfRange { set: 8, way: 0 }));
        assert_eq!(
            t.unlock(0, 1),
            Err(LockError::OutOfRange { set: 0, way: 1 })
        );
        assert!(LockTable::new(0, 4, 1).is_err());
        assert!(LockTable::new(4, 4, 0).is_err());
        // The GTX 480 L1: 16 KB, 4 ways, 128-byte lines.
        let l1 = LockTable::for_cache(16384, 128, 4, 15).unwrap();
        assert_eq!((l1.sets(), l1.ways()), (32, 4));
        assert_eq!(l1.set_of(0x1_0080, 128), 1);
        assert!(LockTable::for_cache(1000, 128, 4, 15).is_err());
        assert!(LockTable::for_cache(16384, 96, 4, 15).is_err());
    }

    /// Random lock/unlock/victim sequences against a shadow count table: at most
    /// N−1 ways per set are ever locked, the victim is never locked and always
    /// exists, and every refusal is exactly the one the rules call for.
    #[test]
    fn random_sequences_never_lock_all_ways() {
        let mut rng = Rng(0x0123_4567_89ab_cdef);
        for ways in 1..=8u32 {
            let (sets, max) = (3u32, 1 + rng.below(4) as u32);
            let mut t = LockTable::new(sets, ways, max).unwrap();
            let mut shadow = vec![vec![0u32; ways as usize]; sets as usize];
            for _ in 0..4000 {
                let (set, way) = (rng.below(3) as u32, rng.below(u64::from(ways)) as u32);
                let c = shadow[set as usize][way as usize];
                let locked = shadow[set as usize].iter().filter(|&&n| n > 0).count() as u32;
                if rng.below(5) < 3 {
                    let expect = if c == max {
                        Err(LockError::Saturated { set, way })
                    } else if c == 0 && locked + 1 == ways {
                        Err(LockError::LastUnlockedWay { set })
                    } else {
                        shadow[set as usize][way as usize] += 1;
                        Ok(c + 1)
                    };
                    assert_eq!(t.lock(set, way), expect);
                } else {
                    let expect = if c == 0 {
                        Err(LockError::NotLocked { set, way })
                    } else {
                        shadow[set as usize][way as usize] -= 1;
                        Ok(c - 1)
                    };
                    assert_eq!(t.unlock(set, way), expect);
                }
                for s in 0..sets {
                    assert!(t.locked_ways(s) < ways, "at most N-1 of N ways");
                    let held = shadow[s as usize].iter().filter(|&&n| n > 0).count();
                    assert_eq!(t.locked_ways(s) as usize, held);
                    let mut order: Vec<u32> = (0..ways).collect();
                    order.rotate_left(rng.below(u64::from(ways)) as usize);
                    let v = t.victim(s, order).expect("a victim always exists");
                    assert!(!t.is_locked(s, v));
                    for w in 0..ways {
                        assert_eq!(t.count(s, w), shadow[s as usize][w as usize]);
                    }
                }
            }
            assert!(t.stats().max_locked_ways < ways);
            if ways > 1 {
                assert_eq!(t.stats().max_locked_ways, ways - 1, "the limit was reached");
            }
        }
    }
}
