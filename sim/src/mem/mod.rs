//! The memory-system timing model shared by the simulators: private L1 caches (any
//! number: Nyuzi has an instruction and a data L1 per core, a GPU one L1 per SM), a
//! shared banked L2, and DRAM with latency and bandwidth.
//!
//! It answers one question, "an access of `size` bytes at `addr` from L1 number `l1`
//! issued at cycle `now`: from which cycle is it done?", and counts hits, misses and
//! writebacks per level. It holds no data: the functional machines own memory contents,
//! so the model only tracks which lines are where and when fills arrive.
//!
//! Latency composition. [`MemorySystem::access`] returns the cycle the data is at the
//! L1 (a read) or the store has been accepted by the level that absorbs it (a write). It
//! excludes the L1's own pipeline latency, which the core model adds (Nyuzi's 4-cycle
//! memory pipeline on a hit). An L1 miss goes to its L2 bank, which accepts one
//! request every `l2_port_cycles` (arbitration: later requests queue); an L2 hit is
//! back `l2_hit_latency` cycles after acceptance; an L2 miss asks DRAM after the L2
//! tag check and is back when the DRAM transfer ends ([`dram`]). Optional miss-status
//! registers (`l1_mshrs`, `l2_mshrs`) bound the line misses a cache has outstanding:
//! a miss that finds them all busy starts when the earliest frees (hits on a line
//! already in flight merge and need none). Dirty L2 victims are
//! written to DRAM and use its bandwidth. Requests are expected in roughly increasing
//! `now` order (a global cycle loop), but not exactly: a miss that waited for a miss
//! register is made for a later cycle, and the next SM of the loop asks for the
//! current one. So the L2 banks and the DRAM channels book each request in the
//! earliest free time at or after its arrival ([`calendar`]): an earlier request is
//! never queued behind a later one that happened to be made first.

pub mod cache;
mod calendar;
pub mod dram;

/// How much earlier than the latest request one may arrive, in cycles: far more
/// than any miss waits for a miss register.
const CALENDAR_CYCLES: u64 = 1 << 16;

#[cfg(test)]
mod tests;

pub use cache::{Cache, CacheConfig, CacheStats, ConfigError, Lookup, Victim, WritePolicy};
pub use dram::{Dram, DramConfig, DramStats};

/// A read or a write (instruction fetches are reads of an instruction L1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessKind {
    Read,
    Write,
}

/// The deepest level an access had to reach.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    L1,
    L2,
    Dram,
}

/// When an access is done, and how far it went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub ready: u64,
    pub level: Level,
}

impl Outcome {
    fn merge(self, o: Outcome) -> Outcome {
        Outcome {
            ready: self.ready.max(o.ready),
            level: self.level.max(o.level),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct MemConfig {
    /// One entry per private L1; its index is the `l1` argument of accesses.
    pub l1: Vec<CacheConfig>,
    pub l2: CacheConfig,
    /// Cycles from an L2 bank accepting a request to the response of a hit.
    pub l2_hit_latency: u32,
    /// Independent L2 pipelines; consecutive L2 lines go to consecutive banks.
    pub l2_banks: u32,
    /// Cycles one request occupies its bank's input (1 = one request per cycle per
    /// bank, 0 = unlimited).
    pub l2_port_cycles: u32,
    /// Outstanding line misses per L1 (0 = unlimited).
    pub l1_mshrs: u32,
    /// Outstanding line misses of the L2 (0 = unlimited).
    pub l2_mshrs: u32,
    pub dram: DramConfig,
}

impl MemConfig {
    pub fn check(&self) -> Result<(), ConfigError> {
        self.l2.check()?;
        self.dram.check()?;
        if self.l2_banks == 0 {
            return Err(ConfigError("the L2 needs at least one bank"));
        }
        for c in &self.l1 {
            c.check()?;
            if c.line_bytes > self.l2.line_bytes {
                return Err(ConfigError("an L1 line may not be longer than an L2 line"));
            }
        }
        Ok(())
    }
}

/// Miss-status holding registers: when each frees. Empty means unlimited.
#[derive(Clone, Debug, Default)]
struct Mshrs {
    free: Vec<u64>,
    /// Cycles misses waited for a free register (summed).
    wait: u64,
}

impl Mshrs {
    fn new(n: u32) -> Mshrs {
        Mshrs {
            free: vec![0; n as usize],
            wait: 0,
        }
    }

    /// A register for a miss arriving at `now`: its index and the cycle the miss can
    /// start (`None` index when unlimited).
    fn acquire(&mut self, now: u64) -> (Option<usize>, u64) {
        let Some((i, &f)) = self.free.iter().enumerate().min_by_key(|&(_, f)| *f) else {
            return (None, now);
        };
        let start = now.max(f);
        self.wait += start - now;
        (Some(i), start)
    }

    /// Holds register `slot` until the miss's fill arrives.
    fn hold(&mut self, slot: Option<usize>, until: u64) {
        if let Some(i) = slot {
            self.free[i] = until;
        }
    }
}

/// Private L1s, a shared L2 and DRAM, with their statistics.
#[derive(Clone, Debug)]
pub struct MemorySystem {
    cfg: MemConfig,
    l1: Vec<Cache>,
    l2: Cache,
    dram: Dram,
    /// Per L2 bank: when its input is busy.
    bank_busy: Vec<calendar::Calendar>,
    /// Cycles requests waited for a busy L2 bank (summed).
    l2_queue_cycles: u64,
    l1_mshrs: Vec<Mshrs>,
    l2_mshrs: Mshrs,
    /// Interconnect flits between the L1s and the L2, both ways
    /// ([`MemorySystem::noc_flits`]).
    noc_flits: u64,
}

/// Bytes of an interconnect flit and of a packet's header (GPGPU-Sim's GTX 480
/// network: `flit_size = 32`; `READ_PACKET_SIZE` and `WRITE_PACKET_SIZE` are 8).
const FLIT_BYTES: u64 = 32;
const PACKET_HEADER_BYTES: u64 = 8;

/// Flits of a packet carrying `data` bytes.
fn noc_flits(data: u64) -> u64 {
    (data + PACKET_HEADER_BYTES).div_ceil(FLIT_BYTES)
}

impl MemorySystem {
    pub fn new(cfg: MemConfig) -> Result<MemorySystem, ConfigError> {
        cfg.check()?;
        let l1 = cfg
            .l1
            .iter()
            .map(|c| Cache::new(*c))
            .collect::<Result<_, _>>()?;
        Ok(MemorySystem {
            l1,
            l2: Cache::new(cfg.l2)?,
            dram: Dram::new(cfg.dram)?,
            bank_busy: vec![calendar::Calendar::new(CALENDAR_CYCLES); cfg.l2_banks as usize],
            l2_queue_cycles: 0,
            l1_mshrs: vec![Mshrs::new(cfg.l1_mshrs); cfg.l1.len()],
            l2_mshrs: Mshrs::new(cfg.l2_mshrs),
            noc_flits: 0,
            cfg,
        })
    }

    pub fn config(&self) -> &MemConfig {
        &self.cfg
    }

    pub fn num_l1(&self) -> usize {
        self.l1.len()
    }

    /// The statistics of L1 number `i` (`None` past the last L1).
    pub fn l1_stats(&self, i: usize) -> Option<&CacheStats> {
        self.l1.get(i).map(Cache::stats)
    }

    pub fn l2_stats(&self) -> &CacheStats {
        self.l2.stats()
    }

    pub fn dram_stats(&self) -> DramStats {
        self.dram.stats()
    }

    /// The set and way of L1 number `l1` holding the line of `addr`, if present.
    pub fn l1_locate(&self, l1: usize, addr: u64) -> Option<(u32, u32)> {
        self.l1.get(l1)?.locate(addr)
    }

    /// Pins or unpins a way of L1 number `l1` ([`Cache::set_pinned`]: a pinned way
    /// is never a replacement victim; DAC's lock counters).
    pub fn l1_set_pinned(&mut self, l1: usize, set: u32, way: u32, pinned: bool) {
        if let Some(c) = self.l1.get_mut(l1) {
            c.set_pinned(set, way, pinned);
        }
    }

    /// Interconnect flits between the L1s and the L2, both ways: a read is a
    /// header-only request and a reply carrying the L2 line, a write one packet
    /// carrying its bytes.
    pub fn noc_flits(&self) -> u64 {
        self.noc_flits
    }

    /// Cycles requests spent waiting for a busy L2 bank, summed.
    pub fn l2_queue_cycles(&self) -> u64 {
        self.l2_queue_cycles
    }

    /// Cycles misses of L1 number `i` waited for a free miss register, summed.
    pub fn l1_mshr_wait_cycles(&self, i: usize) -> u64 {
        self.l1_mshrs.get(i).map_or(0, |m| m.wait)
    }

    /// Whether a line miss of L1 number `l1` at cycle `now` finds a miss register
    /// free (always with unlimited registers; false past the last L1). Lets a
    /// requester that can wait (DAC's address expansion unit) hold its request back
    /// instead of queueing it behind the others.
    pub fn l1_mshr_available(&self, l1: usize, now: u64) -> bool {
        self.l1_mshrs
            .get(l1)
            .is_some_and(|m| m.free.is_empty() || m.free.iter().any(|&f| f <= now))
    }

    /// Cycles L2 misses waited for a free miss register, summed.
    pub fn l2_mshr_wait_cycles(&self) -> u64 {
        self.l2_mshrs.wait
    }

    /// An access of `size` bytes (at least 1 is assumed) at `addr` through L1 `l1` at
    /// cycle `now`. An access that spans several L1 lines accesses each, and is done
    /// when the last is. An `l1` past the last L1 goes straight to the L2 (an uncached
    /// path, as GPU loads that bypass L1 use).
    #[inline(always)]
    pub fn access(
        &mut self,
        l1: usize,
        addr: u64,
        size: u32,
        kind: AccessKind,
        now: u64,
    ) -> Outcome {
        if kind == AccessKind::Read {
            if let Some(ready) = self
                .l1
                .get_mut(l1)
                .and_then(|c| c.read_mru(addr, size, now))
            {
                return Outcome {
                    ready: ready.max(now),
                    level: Level::L1,
                };
            }
        }
        self.access_slow(l1, addr, size, kind, now)
    }

    /// `n` reads of at most one line's bytes each, all within the line of `addr`,
    /// through L1 `l1` at cycles `at`, `at + 1`, ..., when that line is the L1's most
    /// recently used one: the effect of `n` [`MemorySystem::access`] reads, done in one
    /// step. Returns the cycle the line is usable from (each read is done at the later
    /// of that and its own cycle), or `None`, with no effect, when the line is not the
    /// most recently used one (or `l1` is not an L1).
    #[inline]
    pub fn read_mru_repeat(&mut self, l1: usize, addr: u64, n: u64, at: u64) -> Option<u64> {
        self.l1
            .get_mut(l1)
            .and_then(|c| c.read_mru_repeat(addr, n, at))
    }

    /// [`MemorySystem::access`] past the MRU-line fast path (kept out of line so that
    /// the fast path inlines into the simulators' loops).
    #[inline(never)]
    fn access_slow(
        &mut self,
        l1: usize,
        addr: u64,
        size: u32,
        kind: AccessKind,
        now: u64,
    ) -> Outcome {
        let line_bytes = match self.l1.get(l1) {
            Some(c) => u64::from(c.config().line_bytes),
            None => u64::from(self.cfg.l2.line_bytes),
        };
        let size = size.max(1);
        if (addr & (line_bytes - 1)) + u64::from(size) <= line_bytes {
            // The common case: within one line.
            return self.access_line(l1, addr, size, kind, now);
        }
        // Saturating: an access at the top of the address space stops there.
        let end = addr.saturating_add(u64::from(size));
        let mut line = addr & !(line_bytes - 1);
        let mut out: Option<Outcome> = None;
        while line < end {
            let lo = line.max(addr);
            let hi = line.saturating_add(line_bytes).min(end);
            let o = self.access_line(l1, lo, (hi - lo) as u32, kind, now);
            out = Some(out.map_or(o, |p| p.merge(o)));
            line = line.saturating_add(line_bytes);
        }
        out.unwrap_or(Outcome {
            ready: now,
            level: Level::L1,
        })
    }

    /// An access to the L2 alone (no L1), e.g. for an L1-bypassing load.
    pub fn access_l2(&mut self, addr: u64, size: u32, kind: AccessKind, now: u64) -> Outcome {
        match kind {
            AccessKind::Read => self.l2_read(addr, now),
            AccessKind::Write => self.l2_write(addr, size, now),
        }
    }

    /// One access within one L1 line.
    #[inline]
    fn access_line(
        &mut self,
        l1: usize,
        addr: u64,
        bytes: u32,
        kind: AccessKind,
        now: u64,
    ) -> Outcome {
        let Some(cache) = self.l1.get_mut(l1) else {
            return self.access_l2(addr, bytes, kind, now);
        };
        let write = kind == AccessKind::Write;
        let policy = cache.config().write_policy;
        let full_line = bytes == cache.config().line_bytes;
        let hit = cache.access(addr, write, now);
        match (kind, policy, hit) {
            (AccessKind::Write, WritePolicy::WriteThroughNoAllocate, _) => {
                self.l2_write(addr, bytes, now)
            }
            (_, _, Lookup::Hit { ready }) => Outcome {
                ready: ready.max(now),
                level: Level::L1,
            },
            (_, _, Lookup::Miss) => {
                // A full-line store in a write-back L1 need not fetch the old line.
                let fetched = if write && full_line {
                    Outcome {
                        ready: now,
                        level: Level::L1,
                    }
                } else {
                    let (slot, start) = self.l1_mshrs[l1].acquire(now);
                    let o = self.l2_read(addr, start);
                    self.l1_mshrs[l1].hold(slot, o.ready);
                    o
                };
                let victim = self.l1[l1].fill(addr, fetched.ready, write);
                if let Some(v) = victim.filter(|v| v.dirty) {
                    let line_bytes = self.l1[l1].config().line_bytes;
                    self.l2_write(v.addr, line_bytes, now);
                }
                fetched
            }
        }
    }

    /// Waits for the L2 bank of `addr` to accept a request arriving at `now`; returns
    /// the acceptance cycle.
    fn l2_accept(&mut self, addr: u64, now: u64) -> u64 {
        let line = self.l2.line_of(addr);
        let bank = (line % u64::from(self.cfg.l2_banks)) as usize;
        let start = self.bank_busy[bank].reserve(now, u64::from(self.cfg.l2_port_cycles));
        self.l2_queue_cycles += start - now;
        start
    }

    fn l2_read(&mut self, addr: u64, now: u64) -> Outcome {
        self.noc_flits += noc_flits(0) + noc_flits(u64::from(self.l2.config().line_bytes));
        let start = self.l2_accept(addr, now);
        let lat = u64::from(self.cfg.l2_hit_latency);
        match self.l2.access(addr, false, start) {
            Lookup::Hit { ready } => Outcome {
                ready: ready.max(start) + lat,
                level: Level::L2,
            },
            Lookup::Miss => Outcome {
                ready: self.l2_fill(addr, start + lat, false),
                level: Level::Dram,
            },
        }
    }

    fn l2_write(&mut self, addr: u64, bytes: u32, now: u64) -> Outcome {
        self.noc_flits += noc_flits(u64::from(bytes));
        let start = self.l2_accept(addr, now);
        let lat = u64::from(self.cfg.l2_hit_latency);
        let l2_line = self.l2.config().line_bytes;
        let policy = self.l2.config().write_policy;
        match (policy, self.l2.access(addr, true, start)) {
            (WritePolicy::WriteThroughNoAllocate, hit) => {
                let line = self.l2.line_of(addr);
                self.dram.access(line, bytes, true, start + lat);
                let level = match hit {
                    Lookup::Hit { .. } => Level::L2,
                    Lookup::Miss => Level::Dram,
                };
                Outcome {
                    ready: start + lat,
                    level,
                }
            }
            (WritePolicy::WriteBackAllocate, Lookup::Hit { ready }) => Outcome {
                ready: ready.max(start) + lat,
                level: Level::L2,
            },
            (WritePolicy::WriteBackAllocate, Lookup::Miss) if bytes == l2_line => {
                // A whole-line write allocates without reading DRAM.
                self.l2_install(addr, start + lat, true, start);
                Outcome {
                    ready: start + lat,
                    level: Level::L2,
                }
            }
            (WritePolicy::WriteBackAllocate, Lookup::Miss) => Outcome {
                ready: self.l2_fill(addr, start + lat, true),
                level: Level::Dram,
            },
        }
    }

    /// Reads the L2 line of `addr` from DRAM, asked at cycle `ask`, and installs it;
    /// returns the cycle the data arrives.
    fn l2_fill(&mut self, addr: u64, ask: u64, dirty: bool) -> u64 {
        let line = self.l2.line_of(addr);
        let (slot, start) = self.l2_mshrs.acquire(ask);
        let ready = self
            .dram
            .access(line, self.l2.config().line_bytes, false, start);
        self.l2_mshrs.hold(slot, ready);
        self.l2_install(addr, ready, dirty, start);
        ready
    }

    /// Installs a line in the L2, writing a dirty victim back to DRAM at cycle `now`.
    fn l2_install(&mut self, addr: u64, ready: u64, dirty: bool, now: u64) {
        if let Some(v) = self.l2.fill(addr, ready, dirty).filter(|v| v.dirty) {
            let line = self.l2.line_of(v.addr);
            self.dram
                .access(line, self.l2.config().line_bytes, true, now);
        }
    }
}
