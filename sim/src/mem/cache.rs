//! A set-associative cache tag store with LRU replacement and a write policy, and
//! optional pinning of ways (DAC's L1 lock counters: a pinned way is never a victim).
//!
//! It models *where lines are and when they arrive*, never data (the functional
//! machines own memory contents). Each line remembers the cycle its fill completes, so
//! an access to a line still in flight waits for that fill instead of counting as a
//! free hit (the merge a miss-status register would do).

use std::fmt;

/// What happens on a store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WritePolicy {
    /// Every store goes on to the next level; a store miss does not allocate a line
    /// (Nyuzi's L1D). Lines are never dirty.
    WriteThroughNoAllocate,
    /// Stores stay in the cache (the line becomes dirty); a store miss allocates the
    /// line, and a dirty victim is written back to the next level (L2, GPU caches).
    WriteBackAllocate,
}

/// The geometry and write policy of one cache. Latencies belong to the
/// [`super::MemorySystem`] and to the core model, not to the tag store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheConfig {
    pub size_bytes: u32,
    pub ways: u32,
    pub line_bytes: u32,
    pub write_policy: WritePolicy,
}

impl CacheConfig {
    /// Nyuzi's L1 (config.svh): 16 KiB, 4 ways, 64-byte lines, write-through.
    pub const NYUZI_L1: CacheConfig = CacheConfig {
        size_bytes: 16 * 1024,
        ways: 4,
        line_bytes: 64,
        write_policy: WritePolicy::WriteThroughNoAllocate,
    };
    /// Nyuzi's shared L2 (config.svh): 128 KiB, 8 ways, 64-byte lines, write-back.
    pub const NYUZI_L2: CacheConfig = CacheConfig {
        size_bytes: 128 * 1024,
        ways: 8,
        line_bytes: 64,
        write_policy: WritePolicy::WriteBackAllocate,
    };

    /// The number of sets, once [`CacheConfig::check`] has passed.
    pub fn sets(&self) -> u32 {
        self.size_bytes / (self.ways * self.line_bytes)
    }

    /// Every field is usable: a power-of-two line size of at least 4 bytes, at least one
    /// way, and a size that is a whole number of sets (any count, not only powers of
    /// two: a 768 KiB GPU L2 has 384 or 768 sets).
    pub fn check(&self) -> Result<(), ConfigError> {
        let bad = |why| Err(ConfigError(why));
        if self.line_bytes < 4 || !self.line_bytes.is_power_of_two() {
            return bad("cache line size must be a power of two of at least 4 bytes");
        }
        if self.ways == 0 {
            return bad("a cache needs at least one way");
        }
        let set_bytes = u64::from(self.ways) * u64::from(self.line_bytes);
        if self.size_bytes == 0 || u64::from(self.size_bytes) % set_bytes != 0 {
            return bad("cache size must be a positive multiple of ways * line size");
        }
        Ok(())
    }
}

/// A configuration the memory models cannot use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConfigError(pub &'static str);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid memory configuration: {}", self.0)
    }
}

impl std::error::Error for ConfigError {}

/// Counters of one cache. A "hit" includes a hit on a line whose fill is still in
/// flight (`pending_hits` counts those too).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub read_hits: u64,
    pub read_misses: u64,
    pub write_hits: u64,
    pub write_misses: u64,
    /// Hits that had to wait for an outstanding fill of the same line.
    pub pending_hits: u64,
    /// Valid lines replaced by a fill.
    pub evictions: u64,
    /// Dirty lines written to the next level on eviction.
    pub writebacks: u64,
}

impl CacheStats {
    pub fn hits(&self) -> u64 {
        self.read_hits + self.write_hits
    }
    pub fn misses(&self) -> u64 {
        self.read_misses + self.write_misses
    }
    pub fn accesses(&self) -> u64 {
        self.hits() + self.misses()
    }
    /// Adds another cache's counters (to aggregate per-core L1s).
    pub fn add(&mut self, o: &CacheStats) {
        self.read_hits += o.read_hits;
        self.read_misses += o.read_misses;
        self.write_hits += o.write_hits;
        self.write_misses += o.write_misses;
        self.pending_hits += o.pending_hits;
        self.evictions += o.evictions;
        self.writebacks += o.writebacks;
    }
}

const INVALID: u64 = u64::MAX;

#[derive(Clone, Copy, Debug)]
struct Line {
    /// The line address (byte address / line size), or `INVALID`.
    tag: u64,
    /// The cycle the line's fill completes (in the past for a settled line).
    ready: u64,
    /// Last use, from the cache's access counter: the smallest is the LRU way.
    used: u64,
    dirty: bool,
}

const EMPTY: Line = Line {
    tag: INVALID,
    ready: 0,
    used: 0,
    dirty: false,
};

/// The outcome of a lookup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// The line is present; its data is usable from cycle `ready` on (at most the
    /// access cycle for a settled line, later for a fill still in flight).
    Hit { ready: u64 },
    /// The line is absent.
    Miss,
}

/// A line pushed out by [`Cache::fill`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Victim {
    /// The byte address of the victim line.
    pub addr: u64,
    pub dirty: bool,
}

/// One cache's tag store.
#[derive(Clone, Debug)]
pub struct Cache {
    cfg: CacheConfig,
    lines: Vec<Line>,
    sets: u64,
    /// `sets - 1` when the set count is a power of two (a mask instead of a modulo).
    set_mask: Option<u64>,
    line_shift: u32,
    clock: u64,
    stats: CacheStats,
    /// The most recently used line and its slot: repeated accesses to one line (the
    /// lanes of a gather, sequential fetch) skip the set search.
    mru: (u64, usize),
    /// Per slot: pinned by its owner (DAC's L1 lock counters), never a victim.
    /// Empty until the first pin, so caches that never pin pay nothing.
    pinned: Vec<bool>,
}

impl Cache {
    pub fn new(cfg: CacheConfig) -> Result<Cache, ConfigError> {
        cfg.check()?;
        let sets = u64::from(cfg.sets());
        Ok(Cache {
            cfg,
            lines: vec![EMPTY; (sets * u64::from(cfg.ways)) as usize],
            sets,
            set_mask: sets.is_power_of_two().then(|| sets - 1),
            line_shift: cfg.line_bytes.trailing_zeros(),
            clock: 0,
            stats: CacheStats::default(),
            mru: (INVALID, 0),
            pinned: Vec::new(),
        })
    }

    pub fn config(&self) -> &CacheConfig {
        &self.cfg
    }

    pub fn stats(&self) -> &CacheStats {
        &self.stats
    }

    /// The line address (byte address / line size) of `addr`.
    #[inline]
    pub fn line_of(&self, addr: u64) -> u64 {
        addr >> self.line_shift
    }

    #[inline]
    fn set_range(&self, line: u64) -> std::ops::Range<usize> {
        let set = match self.set_mask {
            Some(m) => line & m,
            None => line % self.sets,
        };
        let ways = self.cfg.ways as usize;
        let start = set as usize * ways;
        start..start + ways
    }

    #[inline]
    fn find(&self, line: u64) -> Option<usize> {
        if self.mru.0 == line {
            return Some(self.mru.1);
        }
        let r = self.set_range(line);
        let start = r.start;
        // A line is in at most one way: scan them all without an early exit (which
        // way holds it is unpredictable, and the sets are small).
        let mut way = usize::MAX;
        for (i, l) in self.lines[r].iter().enumerate() {
            if l.tag == line {
                way = i;
            }
        }
        (way != usize::MAX).then(|| start + way)
    }

    /// Whether the line holding `addr` is present (no statistics, no LRU update).
    pub fn contains(&self, addr: u64) -> bool {
        self.find(self.line_of(addr)).is_some()
    }

    /// Looks up the line of `addr` for a read or (`write`) a store at cycle `now`,
    /// counting a hit or a miss and making a hit the most recently used way. A write
    /// hit in a write-back cache marks the line dirty.
    #[inline]
    pub fn access(&mut self, addr: u64, write: bool, now: u64) -> Lookup {
        self.clock += 1;
        let line = self.line_of(addr);
        match self.find(line) {
            Some(i) => {
                self.mru = (line, i);
                let l = &mut self.lines[i];
                l.used = self.clock;
                if write && self.cfg.write_policy == WritePolicy::WriteBackAllocate {
                    l.dirty = true;
                }
                let ready = l.ready;
                if write {
                    self.stats.write_hits += 1;
                } else {
                    self.stats.read_hits += 1;
                }
                self.stats.pending_hits += u64::from(ready > now);
                Lookup::Hit { ready }
            }
            None => {
                if write {
                    self.stats.write_misses += 1;
                } else {
                    self.stats.read_misses += 1;
                }
                Lookup::Miss
            }
        }
    }

    /// [`Cache::access`] for a read of `bytes` at `addr` when it falls within the most
    /// recently used line, with the same effect on the statistics and the LRU order;
    /// `None` (and no effect) otherwise. The memory system's fast path: consecutive
    /// accesses to one line (gather lanes, sequential fetch) are the common case.
    #[inline(always)]
    pub fn read_mru(&mut self, addr: u64, bytes: u32, now: u64) -> Option<u64> {
        let line = self.line_of(addr);
        let end = addr.saturating_add(u64::from(bytes.max(1)) - 1);
        if line != self.mru.0 || end >> self.line_shift != line {
            return None;
        }
        self.clock += 1;
        let l = &mut self.lines[self.mru.1];
        l.used = self.clock;
        let ready = l.ready;
        self.stats.read_hits += 1;
        // Branch-free: whether a fill is still in flight is unpredictable.
        self.stats.pending_hits += u64::from(ready > now);
        Some(ready)
    }

    /// `n` reads within the most recently used line at cycles `at`, `at + 1`, ...,
    /// with the effect of `n` [`Cache::read_mru`] calls (the lanes of a gather that
    /// fall in one line); `None`, and no effect, when `addr`'s line is not the most
    /// recently used one. Returns the cycle the line is usable from.
    #[inline]
    pub fn read_mru_repeat(&mut self, addr: u64, n: u64, at: u64) -> Option<u64> {
        if self.line_of(addr) != self.mru.0 {
            return None;
        }
        self.clock += n;
        let l = &mut self.lines[self.mru.1];
        l.used = self.clock;
        self.stats.read_hits += n;
        // The reads at at + i for i < ready - at find the fill still in flight.
        self.stats.pending_hits += l.ready.saturating_sub(at).min(n);
        Some(l.ready)
    }

    /// Installs the line of `addr`, usable from cycle `ready`, as the most recently
    /// used way, replacing an invalid way or else the least recently used one. Returns
    /// the valid line it replaced, if any. `dirty` marks a line allocated by a store in
    /// a write-back cache.
    pub fn fill(&mut self, addr: u64, ready: u64, dirty: bool) -> Option<Victim> {
        self.clock += 1;
        let line = self.line_of(addr);
        let r = self.set_range(line);
        let start = r.start;
        // The first invalid way (or the line's own), else the first least recently
        // used one that is not pinned, in one pass. A set whose every way is pinned
        // (which the pinning owner must prevent) falls back to the LRU way.
        let mut way = 0;
        let mut oldest = u64::MAX;
        let mut oldest_pinned = (u64::MAX, 0);
        for (i, l) in self.lines[r].iter().enumerate() {
            if l.tag == INVALID || l.tag == line {
                way = i;
                oldest = 0;
                break;
            }
            if self.pinned.get(start + i).copied().unwrap_or(false) {
                if l.used < oldest_pinned.0 {
                    oldest_pinned = (l.used, i);
                }
                continue;
            }
            if l.used < oldest {
                oldest = l.used;
                way = i;
            }
        }
        if oldest == u64::MAX {
            way = oldest_pinned.1;
        }
        let slot = &mut self.lines[start + way];
        let victim = (slot.tag != INVALID && slot.tag != line).then(|| Victim {
            addr: slot.tag << self.line_shift,
            dirty: slot.dirty,
        });
        *slot = Line {
            tag: line,
            ready,
            used: self.clock,
            dirty,
        };
        self.mru = (line, start + way);
        if let Some(v) = victim {
            self.stats.evictions += 1;
            if v.dirty {
                self.stats.writebacks += 1;
            }
        }
        victim
    }

    /// The set and way holding the line of `addr`, if present (no statistics).
    pub fn locate(&self, addr: u64) -> Option<(u32, u32)> {
        let line = self.line_of(addr);
        let slot = self.find(line)?;
        let ways = self.cfg.ways as usize;
        Some(((slot / ways) as u32, (slot % ways) as u32))
    }

    /// Pins (or unpins) the line in `set`, `way`: a pinned way is never chosen as a
    /// victim by [`Cache::fill`] (DAC's L1 lock counters, paper §4.2). The owner must
    /// leave every set an unpinned way; out-of-range ways are ignored.
    pub fn set_pinned(&mut self, set: u32, way: u32, pinned: bool) {
        if way >= self.cfg.ways || u64::from(set) >= self.sets {
            return;
        }
        if self.pinned.is_empty() {
            if !pinned {
                return;
            }
            self.pinned = vec![false; self.lines.len()];
        }
        self.pinned[set as usize * self.cfg.ways as usize + way as usize] = pinned;
    }

    /// Whether `set`, `way` is pinned.
    pub fn is_pinned(&self, set: u32, way: u32) -> bool {
        let i = set as usize * self.cfg.ways as usize + way as usize;
        way < self.cfg.ways && self.pinned.get(i).copied().unwrap_or(false)
    }

    /// Drops every line (no writebacks are counted: callers flush first if needed).
    pub fn invalidate_all(&mut self) {
        self.lines.fill(EMPTY);
        self.pinned.fill(false);
        self.mru = (INVALID, 0);
    }
}
