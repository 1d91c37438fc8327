//! Tests of the cache, DRAM and memory-system models: hit/miss/LRU behaviour, the two
//! write policies, L2 sharing, bank and DRAM queueing arithmetic, configuration errors.

use super::*;

const WT: WritePolicy = WritePolicy::WriteThroughNoAllocate;
const WB: WritePolicy = WritePolicy::WriteBackAllocate;

/// 2 ways x 2 sets of 64-byte lines: lines 128 bytes apart share a set.
fn tiny(policy: WritePolicy) -> CacheConfig {
    CacheConfig {
        size_bytes: 256,
        ways: 2,
        line_bytes: 64,
        write_policy: policy,
    }
}

fn system(l1: Vec<CacheConfig>, l2: CacheConfig) -> MemorySystem {
    MemorySystem::new(MemConfig {
        l1,
        l2,
        l2_hit_latency: 5,
        l2_banks: 1,
        l2_port_cycles: 1,
        l1_mshrs: 0,
        l2_mshrs: 0,
        dram: DramConfig {
            latency: 10,
            bytes_per_cycle: 4.0,
            channels: 1,
        },
    })
    .unwrap()
}

#[test]
fn miss_then_hit_and_stats() {
    let mut c = Cache::new(tiny(WB)).unwrap();
    assert_eq!(c.access(0x40, false, 0), Lookup::Miss);
    assert_eq!(c.fill(0x40, 7, false), None);
    // Same line, another byte: a hit usable at the fill time.
    assert_eq!(c.access(0x7c, false, 3), Lookup::Hit { ready: 7 });
    assert_eq!(c.access(0x44, false, 9), Lookup::Hit { ready: 7 });
    let s = c.stats();
    assert_eq!((s.read_hits, s.read_misses, s.pending_hits), (2, 1, 1));
    assert_eq!((s.hits(), s.misses(), s.accesses()), (2, 1, 3));
}

#[test]
fn lru_evicts_least_recently_used_way() {
    let mut c = Cache::new(tiny(WT)).unwrap();
    let (a, b, d) = (0x000, 0x080, 0x100); // all in set 0
    c.fill(a, 0, false);
    c.fill(b, 0, false);
    // Touch `a`: `b` becomes the LRU way and is the victim of the next fill.
    assert!(matches!(c.access(a, false, 1), Lookup::Hit { .. }));
    let v = c.fill(d, 0, false).unwrap();
    assert_eq!(
        v,
        Victim {
            addr: b,
            dirty: false
        }
    );
    assert!(c.contains(a) && c.contains(d) && !c.contains(b));
    // Now `a` is LRU (d was filled after the touch).
    assert_eq!(c.fill(b, 0, false).unwrap().addr, a);
    assert_eq!(c.stats().evictions, 2);
    // The other set was never disturbed.
    assert!(!c.contains(0x40));
}

#[test]
fn write_back_cache_marks_dirty_and_counts_writebacks() {
    let mut c = Cache::new(tiny(WB)).unwrap();
    c.fill(0x000, 0, false);
    assert!(matches!(c.access(0x000, true, 0), Lookup::Hit { .. }));
    c.fill(0x080, 0, false);
    let v = c.fill(0x100, 0, false).unwrap();
    assert_eq!(
        v,
        Victim {
            addr: 0,
            dirty: true
        }
    );
    assert_eq!(c.stats().writebacks, 1);
    // A write-through cache never holds dirty lines.
    let mut t = Cache::new(tiny(WT)).unwrap();
    t.fill(0x000, 0, false);
    t.access(0x000, true, 0);
    t.fill(0x080, 0, false);
    assert!(!t.fill(0x100, 0, false).unwrap().dirty);
    assert_eq!(t.stats().writebacks, 0);
}

#[test]
fn non_power_of_two_set_count() {
    // A 768 KiB, 16-way, 128-byte-line cache has 384 sets.
    let cfg = CacheConfig {
        size_bytes: 768 * 1024,
        ways: 16,
        line_bytes: 128,
        write_policy: WB,
    };
    assert_eq!(cfg.sets(), 384);
    let mut c = Cache::new(cfg).unwrap();
    let stride = 384 * 128;
    for i in 0..16 {
        assert_eq!(c.fill(i * stride, 0, false), None);
    }
    assert_eq!(c.fill(16 * stride, 0, false).unwrap().addr, 0);
    assert!(c.contains(stride) && c.contains(16 * stride) && !c.contains(0));
}

#[test]
fn config_errors() {
    let ok = tiny(WT);
    assert!(ok.check().is_ok());
    for bad in [
        CacheConfig {
            line_bytes: 48,
            ..ok
        },
        CacheConfig {
            line_bytes: 2,
            ..ok
        },
        CacheConfig { ways: 0, ..ok },
        CacheConfig {
            size_bytes: 200,
            ..ok
        },
        CacheConfig {
            size_bytes: 0,
            ..ok
        },
    ] {
        assert!(Cache::new(bad).is_err(), "{bad:?}");
    }
    let dram = DramConfig {
        latency: 1,
        bytes_per_cycle: 0.0,
        channels: 1,
    };
    assert!(Dram::new(dram).is_err());
    assert!(Dram::new(DramConfig {
        bytes_per_cycle: f64::NAN,
        ..dram
    })
    .is_err());
    assert!(Dram::new(DramConfig {
        bytes_per_cycle: 1.0,
        channels: 0,
        ..dram
    })
    .is_err());
    let long_l1 = CacheConfig {
        line_bytes: 128,
        size_bytes: 512,
        ..ok
    };
    let cfg = MemConfig {
        l1: vec![long_l1],
        l2: tiny(WB),
        l2_hit_latency: 1,
        l2_banks: 1,
        l2_port_cycles: 1,
        l1_mshrs: 0,
        l2_mshrs: 0,
        dram: DramConfig {
            bytes_per_cycle: 1.0,
            ..dram
        },
    };
    assert!(MemorySystem::new(cfg.clone()).is_err());
    assert!(MemorySystem::new(MemConfig {
        l1: vec![ok],
        l2_banks: 0,
        ..cfg.clone()
    })
    .is_err());
    assert!(MemorySystem::new(MemConfig {
        l1: vec![ok],
        ..cfg
    })
    .is_ok());
}

/// A DRAM model of `channels` channels sharing `bytes_per_cycle`.
fn dram(latency: u32, bytes_per_cycle: f64, channels: u32) -> Dram {
    Dram::new(DramConfig {
        latency,
        bytes_per_cycle,
        channels,
    })
    .unwrap()
}

#[test]
fn dram_bandwidth_queues_transfers() {
    let mut d = dram(10, 4.0, 1);
    // 64 bytes at 4 B/cycle = 16 cycles of bus time after 10 cycles of latency.
    assert_eq!(d.access(0, 64, false, 0), 26);
    // Asked at once, the second read waits for the bus: 26 + 16.
    assert_eq!(d.access(1, 64, false, 0), 42);
    // A write needs no latency but still queues for the bus.
    assert_eq!(d.access(2, 64, true, 30), 58);
    // Long after, the bus is free again.
    assert_eq!(d.access(3, 64, false, 100), 126);
    let s = d.stats();
    assert_eq!((s.reads, s.writes, s.bytes, s.busy_cycles), (3, 1, 256, 64));
    // Waits: 16 (second read) + 12 (write: free at 42, asked at 30).
    assert_eq!(s.queue_cycles, 28);
}

#[test]
fn dram_fractional_bandwidth() {
    let mut d = dram(10, 2.4, 1);
    // 64 B / 2.4 B/cycle = 26.67 cycles each: ends 36.67, 63.33, 90.0.
    let ends: Vec<u64> = (0..3).map(|i| d.access(i, 64, false, 0)).collect();
    assert_eq!(ends, vec![37, 64, 90]);
    // 30 more lines: exactly 800 more cycles of bus time.
    let last = (3..33).map(|i| d.access(i, 64, false, 0)).last().unwrap();
    assert_eq!(last, 890);
}

#[test]
fn dram_channels_are_independent() {
    let mut d = dram(0, 8.0, 2);
    // 4 B/cycle per channel: lines 0 and 1 go to different channels and overlap.
    assert_eq!(d.access(0, 64, false, 0), 16);
    assert_eq!(d.access(1, 64, false, 0), 16);
    assert_eq!(d.access(2, 64, false, 0), 32);
}

#[test]
fn read_miss_latency_composes_levels() {
    let mut m = system(vec![tiny(WT)], CacheConfig::NYUZI_L2);
    // L2 accepts at 0; hit latency 5; DRAM asked at 5: 5 + 10 + 16 = 31.
    let o = m.access(0, 0x1000, 4, AccessKind::Read, 0);
    assert_eq!(
        o,
        Outcome {
            ready: 31,
            level: Level::Dram
        }
    );
    // A second read of the same line before the fill lands waits for it (L1 pending hit).
    let o = m.access(0, 0x1004, 4, AccessKind::Read, 20);
    assert_eq!(
        o,
        Outcome {
            ready: 31,
            level: Level::L1
        }
    );
    let o = m.access(0, 0x1008, 4, AccessKind::Read, 40);
    assert_eq!(
        o,
        Outcome {
            ready: 40,
            level: Level::L1
        }
    );
    let s = m.l1_stats(0).unwrap();
    assert_eq!((s.read_hits, s.read_misses, s.pending_hits), (2, 1, 1));
    assert_eq!(m.l2_stats().read_misses, 1);
    assert_eq!(m.dram_stats().reads, 1);
}

#[test]
fn l2_is_shared_between_l1s() {
    let mut m = system(vec![tiny(WT), tiny(WT)], CacheConfig::NYUZI_L2);
    let a = m.access(0, 0x2000, 4, AccessKind::Read, 0);
    assert_eq!(a.level, Level::Dram);
    // The other L1 misses but finds the line in the L2: 100 + 5.
    let b = m.access(1, 0x2000, 4, AccessKind::Read, 100);
    assert_eq!(
        b,
        Outcome {
            ready: 105,
            level: Level::L2
        }
    );
    assert_eq!(m.l1_stats(1).unwrap().read_misses, 1);
    assert_eq!((m.l2_stats().read_hits, m.l2_stats().read_misses), (1, 1));
    assert_eq!(m.dram_stats().reads, 1);
    assert!(m.l1_stats(2).is_none());
}

#[test]
fn l2_bank_accepts_one_request_per_cycle() {
    let mut m = system(vec![tiny(WT), tiny(WT)], CacheConfig::NYUZI_L2);
    // Warm two lines into the L2 (through L1 0), then evict nothing: L1 1 misses both.
    m.access(0, 0x000, 4, AccessKind::Read, 0);
    m.access(0, 0x040, 4, AccessKind::Read, 0);
    let a = m.access(1, 0x000, 4, AccessKind::Read, 200);
    let b = m.access(1, 0x040, 4, AccessKind::Read, 200);
    assert_eq!((a.ready, b.ready), (205, 206));
    assert!(m.l2_queue_cycles() >= 1);
}

#[test]
fn write_through_l1_does_not_allocate_and_l2_absorbs_stores() {
    let mut m = system(vec![tiny(WT)], CacheConfig::NYUZI_L2);
    // Store miss: L1 does not allocate; the L2 allocates (write-allocate, reads DRAM).
    let o = m.access(0, 0x3000, 4, AccessKind::Write, 0);
    assert_eq!(o.level, Level::Dram);
    assert_eq!(m.l1_stats(0).unwrap().write_misses, 1);
    assert_eq!(m.l2_stats().write_misses, 1);
    // The L1 still misses on a load of that line; the L2 hits.
    let r = m.access(0, 0x3000, 4, AccessKind::Read, 100);
    assert_eq!(
        r,
        Outcome {
            ready: 105,
            level: Level::L2
        }
    );
    // Now a store hits the L1 but still goes through to the L2 (L2 latency).
    let w = m.access(0, 0x3000, 4, AccessKind::Write, 200);
    assert_eq!(
        w,
        Outcome {
            ready: 205,
            level: Level::L2
        }
    );
    assert_eq!(m.l1_stats(0).unwrap().write_hits, 1);
    assert_eq!(m.l2_stats().write_hits, 1);
    assert_eq!(m.l1_stats(0).unwrap().writebacks, 0);
}

#[test]
fn write_back_l1_keeps_stores_and_writes_back_victims() {
    let mut m = system(vec![tiny(WB)], CacheConfig::NYUZI_L2);
    // A partial-line store miss fetches the line, then stays in the L1.
    let o = m.access(0, 0x000, 4, AccessKind::Write, 0);
    assert_eq!(o.level, Level::Dram);
    let w = m.access(0, 0x004, 4, AccessKind::Write, 100);
    assert_eq!(
        w,
        Outcome {
            ready: 100,
            level: Level::L1
        }
    );
    assert_eq!(m.l2_stats().write_hits + m.l2_stats().write_misses, 0);
    // A whole-line store miss allocates without any fetch.
    let full = m.access(0, 0x080, 64, AccessKind::Write, 110);
    assert_eq!(
        full,
        Outcome {
            ready: 110,
            level: Level::L1
        }
    );
    // A third line in set 0 evicts the dirty LRU line 0x000: one writeback to the L2.
    m.access(0, 0x100, 4, AccessKind::Read, 120);
    assert_eq!(m.l1_stats(0).unwrap().writebacks, 1);
    assert_eq!(m.l2_stats().write_hits, 1);
}

#[test]
fn dirty_l2_victims_go_to_dram() {
    // A one-set, one-way L2: every new line evicts the previous one.
    let l2 = CacheConfig {
        size_bytes: 64,
        ways: 1,
        line_bytes: 64,
        write_policy: WB,
    };
    let mut m = system(vec![tiny(WT)], l2);
    m.access(0, 0x000, 4, AccessKind::Write, 0); // L2: line 0 dirty
    m.access(0, 0x040, 4, AccessKind::Read, 100); // evicts it
    assert_eq!(m.l2_stats().writebacks, 1);
    assert_eq!(m.dram_stats().writes, 1);
    assert_eq!(m.dram_stats().reads, 2);
}

#[test]
fn accesses_spanning_lines_and_bypassing_l1() {
    let mut m = system(vec![tiny(WT)], CacheConfig::NYUZI_L2);
    // 8 bytes across a line boundary: two L1 misses.
    m.access(0, 0x3c, 8, AccessKind::Read, 0);
    assert_eq!(m.l1_stats(0).unwrap().read_misses, 2);
    // L1 index past the last: the L2 directly.
    let o = m.access(7, 0x00, 4, AccessKind::Read, 500);
    assert_eq!(
        o,
        Outcome {
            ready: 505,
            level: Level::L2
        }
    );
    assert_eq!(m.l1_stats(0).unwrap().accesses(), 2);
}

#[test]
fn miss_registers_bound_outstanding_misses() {
    let mut cfg = MemConfig {
        l1: vec![tiny(WT)],
        l2: CacheConfig::NYUZI_L2,
        l2_hit_latency: 5,
        l2_banks: 1,
        l2_port_cycles: 0,
        l1_mshrs: 2,
        l2_mshrs: 0,
        dram: DramConfig {
            latency: 10,
            bytes_per_cycle: 256.0, // one cycle per line on each channel
            channels: 4,
        },
    };
    // Three L1 misses at once with two registers: the third starts when the first
    // fill (5 + 10 + 1 = 16) frees its register.
    let mut m = MemorySystem::new(cfg.clone()).unwrap();
    let r: Vec<u64> = [0x000, 0x040, 0x0c0]
        .iter()
        .map(|&a| m.access(0, a, 4, AccessKind::Read, 0).ready)
        .collect();
    assert_eq!(r, vec![16, 16, 32]);
    assert_eq!(m.l1_mshr_wait_cycles(0), 16);
    // A hit on a line in flight needs no register.
    assert_eq!(m.access(0, 0x004, 4, AccessKind::Read, 1).ready, 16);
    // The same bound at the L2: misses that hit neither cache.
    cfg.l1_mshrs = 0;
    cfg.l2_mshrs = 1;
    let mut m = MemorySystem::new(cfg).unwrap();
    let a = m.access(0, 0x000, 4, AccessKind::Read, 0).ready;
    let b = m.access(0, 0x040, 4, AccessKind::Read, 0).ready;
    assert_eq!((a, b), (16, 27));
    assert_eq!(m.l2_mshr_wait_cycles(), 11);
    assert_eq!(m.l1_mshr_wait_cycles(9), 0);
}

#[test]
fn accesses_at_the_top_of_the_address_space_do_not_overflow() {
    let mut m = system(vec![tiny(WT)], CacheConfig::NYUZI_L2);
    let o = m.access(0, u64::MAX - 2, 8, AccessKind::Read, 0);
    assert_eq!(o.level, Level::Dram);
    assert_eq!(m.l1_stats(0).unwrap().read_misses, 1);
}

/// 4 ways x 2 sets of 64-byte lines: lines 128 bytes apart share a set.
fn four_way() -> CacheConfig {
    CacheConfig {
        size_bytes: 512,
        ways: 4,
        line_bytes: 64,
        write_policy: WT,
    }
}

#[test]
fn pinned_ways_are_never_victims() {
    let mut c = Cache::new(four_way()).unwrap();
    let line = |k: u64| k * 0x80; // all in set 0
    for k in 0..4 {
        c.fill(line(k), 0, false);
    }
    assert_eq!(c.locate(line(0)), Some((0, 0)));
    assert_eq!(c.locate(line(3)), Some((0, 3)));
    assert_eq!(c.locate(0x40), None);
    // Lines 0 and 1 are the LRU ones, but pinned: 2 goes, then 3.
    c.set_pinned(0, 0, true);
    c.set_pinned(0, 1, true);
    assert!(c.is_pinned(0, 1) && !c.is_pinned(0, 2) && !c.is_pinned(1, 0));
    assert_eq!(c.fill(line(4), 0, false).unwrap().addr, line(2));
    assert_eq!(c.fill(line(5), 0, false).unwrap().addr, line(3));
    // Way 2 (line 4) is now the LRU unpinned way.
    assert_eq!(c.fill(line(6), 0, false).unwrap().addr, line(4));
    assert!(c.contains(line(0)) && c.contains(line(1)));
    // Unpinned, line 0 is the LRU way again.
    c.set_pinned(0, 0, false);
    assert_eq!(c.fill(line(7), 0, false).unwrap().addr, line(0));
    // Out of range pins are ignored; invalidation drops pins with the lines.
    c.set_pinned(9, 0, true);
    c.set_pinned(0, 4, true);
    c.invalidate_all();
    assert!(!c.is_pinned(0, 1));
}

#[test]
fn a_set_pinned_everywhere_falls_back_to_lru() {
    let mut c = Cache::new(four_way()).unwrap();
    for k in 0..4u64 {
        c.fill(k * 0x80, 0, false);
        c.set_pinned(0, k as u32, true);
    }
    // The owner broke the N-1 rule: the cache still replaces (the LRU way).
    assert_eq!(c.fill(0x200, 0, false).unwrap().addr, 0);
}

/// Random fills and pins through the memory system (never pinning a set's last
/// unpinned way, as the lock counters do): a pinned line is never evicted, so every
/// access to it hits.
#[test]
fn random_fills_never_evict_pinned_lines() {
    let mut m = system(vec![four_way()], CacheConfig::NYUZI_L2);
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let mut pinned: Vec<(u64, u32, u32)> = Vec::new();
    for now in 0..5000u64 {
        let addr = next(64) * 0x40;
        m.access(0, addr, 4, AccessKind::Read, now);
        let (set, way) = m.l1_locate(0, addr).expect("a read allocates its line");
        let held = pinned.iter().filter(|p| p.1 == set).count();
        let already = pinned.iter().any(|p| p.0 == addr);
        if next(3) == 0 && !already && held + 1 < 4 {
            m.l1_set_pinned(0, set, way, true);
            pinned.push((addr, set, way));
        } else if next(4) == 0 && !pinned.is_empty() {
            let (_, s, w) = pinned.swap_remove(next(pinned.len() as u64) as usize);
            m.l1_set_pinned(0, s, w, false);
        }
        for &(a, s, w) in &pinned {
            assert_eq!(
                m.l1_locate(0, a),
                Some((s, w)),
                "pinned line {a:#x} evicted"
            );
        }
    }
}
