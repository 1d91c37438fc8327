//! The statistics of a Nyuzi run: the totals `--stats` reports, the per-core
//! breakdown of `--stats=full`, and the machine a run's JSON records.

use sim::mem::CacheStats;
use sim::nyuzi::timing::{StallCause, TimingConfig, TimingReport};
use sim::nyuzi::Machine;

use super::run::{word, BuiltLaunch, NyuziRunOptions};
use super::runtime::sched;
use crate::launch::{Breakdown, Settings, Stats};

/// The launch's statistics: instruction counts by class, lane utilization, the
/// runtime's counters and, with the timing model, cycles, IPC, caches and stalls.
pub fn statistics(m: &Machine, built: &BuiltLaunch, report: Option<&TimingReport>) -> Stats {
    let s = m.stats();
    let layout = &built.image.layout;
    let mut stats = Stats::new();
    stats
        .set(Stats::DYNAMIC_INSTRUCTIONS, s.retired)
        .set("emulator_instructions", m.emulator_instructions())
        .set("scalar_instructions", s.scalar)
        .set("vector_instructions", s.vector)
        .set("masked_instructions", s.masked)
        .set("memory_instructions", s.memory)
        .set("branch_instructions", s.branch)
        .set("vector_lane_slots", s.vector_lane_slots)
        .set("active_lanes", s.active_lanes)
        .set("hardware_threads", u64::from(layout.threads_used))
        .set("spill_stores", u64::from(built.object.spill_stores))
        .set("spill_loads", u64::from(built.object.spill_loads))
        .set(
            "rematerialized_values",
            u64::from(built.object.rematerialized_values),
        )
        .set("gangs_per_block", u64::from(layout.gangs_per_block));
    let entry = &built.launch.signature.name;
    if let Some((_, c)) = built.object.shuffles.iter().find(|(f, _)| f == entry) {
        // Static, under `--shuffle`: the entry's varying loads and those served from
        // another load's register, as the dac-gpu reports them.
        c.record(&mut stats);
    }
    if s.vector_lane_slots > 0 {
        stats.set(
            "lane_utilization",
            s.active_lanes as f64 / s.vector_lane_slots as f64,
        );
    }
    let (barriers, blocks) = runtime_counts(m, built)
        .iter()
        .fold((0, 0), |(b, k), &(_, bar, blk)| (b + bar, k + blk));
    stats
        .set("barriers", barriers)
        .set("blocks", blocks)
        .set("gangs", blocks * u64::from(layout.gangs_per_block));
    if let Some(r) = report {
        stats.set(Stats::CYCLES, r.cycles).set("ipc", r.ipc);
        for (name, v) in r.stat_pairs() {
            // Totals only (per-thread counters are in the timing report itself).
            if name.starts_with("thread") || name == "cycles" {
                continue;
            }
            stats.set(&name.replace('.', "_"), v);
        }
        for (name, c) in [("l1i", &r.l1i), ("l1d", &r.l1d), ("l2", &r.l2)] {
            if let Some(rate) = hit_rate(c) {
                stats.set(&format!("{name}_hit_rate"), rate);
            }
        }
        for c in StallCause::ALL {
            stats.set(&format!("stall_{}", c.name()), r.stall(c));
        }
        for (name, nj) in r.energy_pairs() {
            stats.set(name, nj);
        }
    }
    stats
}

/// Per worker: (hardware thread, barriers released, blocks run), from the launch
/// runtime's scheduler records.
fn runtime_counts(m: &Machine, built: &BuiltLaunch) -> Vec<(u32, u64, u64)> {
    let layout = &built.image.layout;
    (0..layout.threads_used)
        .map(|w| {
            let rec = layout.scheduler(w);
            (
                layout.worker_threads.get(w as usize).copied().unwrap_or(w),
                u64::from(word(m, rec + sched::BARRIERS as u32)),
                u64::from(word(m, rec + sched::BLOCKS_RUN as u32)),
            )
        })
        .collect()
}

fn hit_rate(c: &CacheStats) -> Option<f64> {
    (c.accesses() > 0).then(|| c.hits() as f64 / c.accesses() as f64)
}

/// Per core: the blocks its hardware threads ran and, with the timing model, their
/// instructions, issue slots, stalls and the core's L1 hit rates.
pub fn per_core(m: &Machine, built: &BuiltLaunch, report: Option<&TimingReport>) -> Breakdown {
    let layout = &built.image.layout;
    let per_core = layout.threads_per_core.max(1);
    let mut units: Vec<Stats> = (0..layout.cores).map(|_| Stats::new()).collect();
    let mut blocks = vec![0u64; units.len()];
    for (thread, _, b) in runtime_counts(m, built) {
        if let Some(n) = blocks.get_mut((thread / per_core) as usize) {
            *n += b;
        }
    }
    for (unit, b) in units.iter_mut().zip(&blocks) {
        unit.set("blocks", *b);
    }
    if let Some(r) = report {
        for (core, unit) in units.iter_mut().enumerate() {
            let threads = r
                .threads
                .iter()
                .skip(core * per_core as usize)
                .take(per_core as usize);
            let (mut retired, mut issued) = (0, 0);
            let mut stalls = [0u64; StallCause::ALL.len()];
            for t in threads {
                retired += t.retired;
                issued += t.issued;
                for (s, x) in stalls.iter_mut().zip(t.stalls) {
                    *s += x;
                }
            }
            unit.set(Stats::DYNAMIC_INSTRUCTIONS, retired)
                .set("issued", issued);
            if r.cycles > 0 {
                unit.set("ipc", retired as f64 / r.cycles as f64);
            }
            if let Some(c) = r.cores.get(core) {
                for (name, cache) in [("l1i", &c.l1i), ("l1d", &c.l1d)] {
                    if let Some(rate) = hit_rate(cache) {
                        unit.set(&format!("{name}_hit_rate"), rate);
                    }
                }
            }
            for (c, x) in StallCause::ALL.iter().zip(stalls) {
                unit.set(&format!("stall_{}", c.name()), x);
            }
        }
    }
    Breakdown {
        unit_kind: "core".into(),
        units,
        functions: Vec::new(),
    }
}

/// The machine of a run, for its JSON record: the cores and threads, the image's
/// options and, with the timing model, its parameters.
pub fn machine_settings(opts: &NyuziRunOptions) -> Settings {
    let mut m = Settings::new();
    let mut put = |k: &str, v: serde_json::Value| {
        m.insert(k.to_string(), v);
    };
    put("cores", opts.machine.cores.into());
    put("threads_per_core", opts.machine.threads_per_core.into());
    put("gang_stack", opts.image.gang_stack.into());
    put("bounds_check", opts.bounds_check.into());
    put("timing", opts.timing.into());
    if opts.timing {
        let t = TimingConfig::default();
        for (name, c) in [("l1i", t.l1i), ("l1d", t.l1d), ("l2", t.l2)] {
            put(&format!("{name}_bytes"), c.size_bytes.into());
            put(&format!("{name}_ways"), c.ways.into());
            put(&format!("{name}_line_bytes"), c.line_bytes.into());
        }
        put("l2_hit_latency", t.l2_hit_latency.into());
        put("l2_port_cycles", t.l2_port_cycles.into());
        put("dram_latency", t.dram_latency.into());
        put("dram_bytes_per_cycle", t.dram_bytes_per_cycle.into());
        put("int_latency", t.int_latency.into());
        put("fp_latency", t.fp_latency.into());
        put("mem_latency", t.mem_latency.into());
        put("branch_penalty", t.branch_penalty.into());
        put("io_latency", t.io_latency.into());
        put("max_cycles", opts.max_cycles.into());
    }
    m
}
